"""keras_transformer: the Transformer of "Attention Is All You Need" in Keras 3.

Subpackages are imported on first access (`import keras_transformer` imports neither
TensorFlow nor matplotlib); call `register()` before loading a saved model with Keras.
"""

import importlib

__version__ = "0.1.0"

SUBMODULES = (
    "analysis", "data", "exercises", "export", "inference", "layers", "models", "plots", "training",
)  # fmt: skip

__all__ = [*SUBMODULES, "__version__", "register"]


def register() -> None:
    """Imports every module that registers Keras objects (layers, losses, metrics, schedule)."""
    importlib.import_module("keras_transformer.layers")
    importlib.import_module("keras_transformer.training")


def __getattr__(name: str):
    if name in SUBMODULES:
        return importlib.import_module(f"keras_transformer.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *SUBMODULES])
