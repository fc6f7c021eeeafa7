"""Build hook: the wheel ships the tutorial notebooks as package data (metadata: setup.cfg).

`tutorials/NN_*.ipynb` are copied into `keras_transformer/course/tutorials/` of the build
directory, not of the source tree, so git holds one copy of each notebook and an installed
wheel still has them for `keras-transformer exercises`. An editable install (`pip install -e .`)
imports the package from the clone, so the build links `keras_transformer/course/tutorials` to
the clone's `tutorials/` (a symbolic link that git ignores; a copy where links are not allowed):
the package finds its notebooks in one place, installed either way.

The guides the commands point to (`keras_transformer.guides.GUIDES`: `docs/serving.md`,
`docs/scaling.md`) go the same way into `keras_transformer/course/guides/` (an editable install
links that folder to the clone's `docs/`).
"""

import os
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

TUTORIALS = pathlib.Path(__file__).resolve().parent / "tutorials"
NOTEBOOKS = "[0-9][0-9]_*.ipynb"
PACKAGED = ("keras_transformer", "course", "tutorials")
DOCS = pathlib.Path(__file__).resolve().parent / "docs"
GUIDES = ("serving", "scaling")  # keras_transformer.guides.GUIDES (tests/test_packaging.py checks)
PACKAGED_GUIDES = ("keras_transformer", "course", "guides")


class BuildPyWithTutorials(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            link_tutorials_into_clone()
            link_into_clone(PACKAGED_GUIDES, DOCS, [DOCS / f"{name}.md" for name in GUIDES])
            return
        notebooks = sorted(TUTORIALS.glob(NOTEBOOKS))
        if not notebooks:
            raise FileNotFoundError(
                f"no tutorial notebook in {TUTORIALS}: build from a clone or from an sdist "
                "(MANIFEST.in includes them)"
            )
        target = pathlib.Path(self.build_lib, *PACKAGED)
        self.mkpath(str(target))
        for path in notebooks:
            self.copy_file(str(path), str(target / path.name))
        guides = pathlib.Path(self.build_lib, *PACKAGED_GUIDES)
        self.mkpath(str(guides))
        for name in GUIDES:
            self.copy_file(str(DOCS / f"{name}.md"), str(guides / f"{name}.md"))


def link_tutorials_into_clone() -> None:
    """`keras_transformer/course/tutorials` -> `tutorials/` in the clone (editable installs)."""
    link_into_clone(PACKAGED, TUTORIALS, sorted(TUTORIALS.glob(NOTEBOOKS)))


def link_into_clone(packaged: tuple[str, ...], folder: pathlib.Path, files) -> None:
    """The package folder `packaged` -> `folder` of the clone; where links are not allowed, a
    copy of `files`."""
    target = pathlib.Path(__file__).resolve().parent.joinpath(*packaged)
    if target.is_symlink() and target.resolve() == folder:
        return
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    try:
        target.symlink_to(os.path.relpath(folder, target.parent), target_is_directory=True)
    except OSError:  # no symbolic links (Windows without the right): the files the wheel holds
        target.mkdir(parents=True)
        for path in files:
            shutil.copy2(path, target / path.name)


setup(cmdclass={"build_py": BuildPyWithTutorials})
