"""keras_transformer: the Transformer of "Attention Is All You Need" in Keras 3.

Subpackages: `layers`, `models`, `data`, `training`, `inference`, `export`,
`analysis`, `exercises`, and the `plots` module. Each is imported on first access
(`kt.layers.AddNorm` imports `keras_transformer.layers`), so `import
keras_transformer` alone imports neither TensorFlow nor matplotlib. The
package's own loaders (`Translator.from_run_dir`, `load_pretrained`, ...)
import the layers, losses and schedule first, so their Keras registration is
in place before `keras.models.load_model(path, safe_mode=True)`; call
`keras_transformer.register()` before loading a saved model with Keras directly.
"""

import importlib

__version__ = "0.1.0"

SUBMODULES = (
    "analysis",
    "data",
    "exercises",
    "export",
    "inference",
    "layers",
    "models",
    "plots",
    "training",
)

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
