"""Export for TensorFlow Serving."""

from keras_transformer.export.serving import export_translator, next_version

__all__ = ["export_translator", "next_version"]
