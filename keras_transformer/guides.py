"""The guides that the commands point to, shipped inside the package.

`keras-transformer export` ends with a pointer to the serving guide and `train --help` to the
scaling guide. A wheel holds no `docs/` folder, so the build copies these pages of the clone's
`docs/` into `keras_transformer/course/guides/` (setup.py; an editable install links that folder
to the clone's `docs/`), and a pointer names the installed file, which a user can open. The
documentation site, `DOCS_URL`, is the package's "Documentation" URL (setup.cfg).
"""

import pathlib

GUIDES = ("serving", "scaling")
"""`docs/<name>.md` pages copied into the package (setup.py's `GUIDES` lists the same)."""

DOCS_URL = "https://keras-transformer.readthedocs.io/"
"""The documentation site (mkdocs.yml `site_url`, setup.cfg `project_urls`)."""


def guide_path(name: str) -> pathlib.Path:
    """The installed copy of the guide `name` (one of `GUIDES`).

    Example:
    >>> guide_path("serving").name
    'serving.md'
    """
    if name not in GUIDES:
        raise ValueError(f"name={name!r} is not a shipped guide; choose one of {list(GUIDES)}.")
    return pathlib.Path(__file__).resolve().parent / "course" / "guides" / f"{name}.md"


def guide_pointer(name: str) -> str:
    """Where to read the guide `name`: its installed file."""
    return str(guide_path(name))
