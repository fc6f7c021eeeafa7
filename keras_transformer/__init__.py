"""keras_transformer: the Transformer of "Attention Is All You Need" in Keras 3.

Subpackages are imported on first access (`import keras_transformer` imports neither
TensorFlow nor matplotlib); call `register()` before loading a saved model with Keras.
TensorFlow's native log lines are kept off stderr (`TF_CPP_MIN_LOG_LEVEL=3` unless the
environment sets it, and its start-up lines when `kt.<subpackage>` imports it); set
`TF_CPP_MIN_LOG_LEVEL=0` before importing to see them.
"""

import importlib
import importlib.util
import os

from keras_transformer._quiet import import_tensorflow_quietly, quiet_native_logs

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

    Imports `REGISTERING_MODULES` (layers, losses, metrics, learning-rate schedules). Call it
    once before `keras.models.load_model`:

    ```python
    import keras, keras_transformer as kt
    kt.register()
    model = keras.models.load_model("runs/numbers/model.keras", safe_mode=True)
    ```
    """
    import_tensorflow_quietly()  # its native start-up lines stay off stderr
    for name in REGISTERING_MODULES:
        importlib.import_module(name)


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
