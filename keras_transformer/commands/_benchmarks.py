"""`benchmark` and `compare` run measurement code that lives in the clone's `benchmarks/`, beside
the package (`pip install -e .` from a clone, as the README installs): not in `keras_transformer/`."""

import importlib
import pathlib
import sys

from keras_transformer.errors import UserInputError

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def load(name: str):
    """The module `benchmarks/<name>.py` (`harness` or `comparison`) of the source checkout."""
    if not (BENCHMARKS / f"{name}.py").is_file():
        raise UserInputError(
            f"this command runs benchmarks/{name}.py of a keras_transformer clone, and "
            f"{BENCHMARKS} has none: install from a clone (`bash scripts/setup.sh`, or "
            f"`pip install -e .` in it) to measure"
        )
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)
