"""The guides that the commands point to, shipped inside the package.

`keras-transformer export` ends with a pointer to the serving guide and `train --help` to the
scaling guide. A wheel holds no `docs/` folder, so the build copies these pages of the clone's
`docs/` into `keras_transformer/course/guides/` (setup.py; an editable install links that folder
to the clone's `docs/`), and a pointer names the installed file, which a user can open, or
the command that prints it, `python -m keras_transformer.guides NAME` (help text, which the docs
site also shows, names no path of the machine it was built on). `DOCS_URL` is the package's
"Documentation" URL (setup.cfg `project_urls`).
"""

import pathlib
import sys

GUIDES = ("serving", "scaling")
"""`docs/<name>.md` pages copied into the package (setup.py's `GUIDES` lists the same)."""

DOCS_URL = "https://keras-transformer.readthedocs.io/"
"""The documentation site: setup.cfg `project_urls` (not mkdocs.yml `site_url`, which would
make every page link a canonical URL on another host)."""


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


def guide_command(name: str) -> str:
    """The command that prints the guide `name` (for help text)."""
    return f"python -m keras_transformer.guides {name}"


def main(argv: list[str] | None = None) -> int:
    """`python -m keras_transformer.guides [NAME]`: prints the guide, or lists them."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in GUIDES:
        print(f"usage: python -m keras_transformer.guides {{{','.join(GUIDES)}}}")
        for name in GUIDES:
            print(f"  {name}: {guide_path(name)}")
        return 0 if not args else 2
    sys.stdout.write(guide_path(args[0]).read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
