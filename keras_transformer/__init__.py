"""keras_transformer: the Transformer of "Attention Is All You Need" in Keras 3.

Subpackages: `layers`, `models`, `data`, `training`, `inference`, `export`,
`analysis`. Importing the package registers every custom layer, loss, metric
and schedule with Keras, so `keras.models.load_model(path, safe_mode=True)`
can rebuild saved models.
"""

from keras_transformer import analysis, data, export, inference, layers, models, training

__version__ = "0.1.0"

__all__ = ["analysis", "data", "export", "inference", "layers", "models", "training", "__version__"]
