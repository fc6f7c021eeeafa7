"""Training pieces of the paper: learning-rate schedule, optimizer, masked loss and accuracy."""

from keras_transformer.training.losses import MaskedAccuracy, MaskedSparseCategoricalCrossentropy
from keras_transformer.training.optimizer import make_optimizer, paper_adam
from keras_transformer.training.schedule import TransformerSchedule

__all__ = [
    "MaskedAccuracy",
    "MaskedSparseCategoricalCrossentropy",
    "TransformerSchedule",
    "make_optimizer",
    "paper_adam",
]
