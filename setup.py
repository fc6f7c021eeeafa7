"""Build hook: the wheel ships the tutorial notebooks as package data (metadata: setup.cfg).

`tutorials/NN_*.ipynb` are copied into `keras_transformer/course/tutorials/` of the build
directory, not of the source tree, so git holds one copy of each notebook and an installed
wheel still has them for `keras-transformer exercises`. An editable install (`pip install -e .`)
reads the clone's `tutorials/` in place (`keras_transformer.course.notebooks.tutorials_dir`).
"""

import pathlib

from setuptools import setup
from setuptools.command.build_py import build_py

TUTORIALS = pathlib.Path(__file__).resolve().parent / "tutorials"
PACKAGED = ("keras_transformer", "course", "tutorials")


class BuildPyWithTutorials(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        notebooks = sorted(TUTORIALS.glob("[0-9][0-9]_*.ipynb"))
        if not notebooks:
            raise FileNotFoundError(
                f"no tutorial notebook in {TUTORIALS}: build from a clone or from an sdist "
                "(MANIFEST.in includes them)"
            )
        target = pathlib.Path(self.build_lib, *PACKAGED)
        self.mkpath(str(target))
        for path in notebooks:
            self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildPyWithTutorials})
