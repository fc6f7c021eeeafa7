"""keras_transformer: the Transformer of "Attention Is All You Need" in Keras 3.

Subpackages are imported on first access (`import keras_transformer` imports neither
TensorFlow nor matplotlib). `import keras_transformer` is enough for `keras.models.load_model`:
the package's Keras objects are registered as soon as Keras is imported (`_registration`).
TensorFlow's native log lines are kept off stderr (`TF_CPP_MIN_LOG_LEVEL=3` unless the
environment sets it, and its start-up lines when `kt.<subpackage>` imports it); set
`TF_CPP_MIN_LOG_LEVEL=0` before importing to see them.
"""

import importlib
import importlib.util
import os

from keras_transformer._quiet import import_tensorflow_quietly, quiet_native_logs
from keras_transformer._registration import after_keras_import

__version__ = "0.2.0"

quiet_native_logs()  # TF_CPP_MIN_LOG_LEVEL=3 unless set (read once TensorFlow is imported)

NO_TENSORFLOW = frozenset({"course", "plots"})
"""Subpackages that import without TensorFlow (the rest import it quietly, `_quiet`)."""

BACKEND_NEUTRAL = frozenset({"layers", "models"})
"""Subpackages written in `keras.ops` only: TensorFlow is imported for them only when it is
Keras's backend (under JAX or PyTorch they run without it)."""

SUBMODULES = (
    "analysis",
    "course",
    "data",
    "exercises",
    "export",
    "inference",
    "layers",
    "models",
    "plots",
    "training",
    "visualization",
)

REGISTERING_MODULES = (
    "keras_transformer.layers",  # imports every layer module
    "keras_transformer.training.losses",  # losses and metrics
    "keras_transformer.training.schedule",  # TransformerSchedule, BudgetSchedule (--time-budget)
)
"""Every module that calls `keras.saving.register_keras_serializable` (tests/test_register.py
scans the source for that call, so a module added or moved later cannot be left out)."""

__all__ = [*SUBMODULES, "__version__", "register"]


def register() -> None:
    """Registers every Keras object a run saves, so that `load_model` finds it by name.

    Imports `REGISTERING_MODULES` (layers, losses, metrics, learning-rate schedules).
    `import keras_transformer` already does this once Keras is imported (as KerasHub does), so
    a load needs no call:

    ```python
    import keras, keras_transformer
    model = keras.models.load_model("runs/numbers/model.keras", safe_mode=True)
    ```
    """
    import_tensorflow_quietly()  # its native start-up lines stay off stderr
    _register_modules()


def _register_modules() -> None:
    for name in REGISTERING_MODULES:
        importlib.import_module(name)


after_keras_import(_register_modules)  # now if Keras is imported, else when it is


def __getattr__(name: str):
    if name in SUBMODULES:
        if _imports_tensorflow(name):  # TensorFlow's native start-up lines stay off stderr
            import_tensorflow_quietly()
        return importlib.import_module(f"keras_transformer.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _imports_tensorflow(name: str) -> bool:
    if name in NO_TENSORFLOW or importlib.util.find_spec("tensorflow") is None:
        return False
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    return name not in BACKEND_NEUTRAL or backend == "tensorflow"


def __dir__():
    return sorted([*globals(), *SUBMODULES])
