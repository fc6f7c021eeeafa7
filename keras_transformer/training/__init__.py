"""Training pieces of the paper: learning-rate schedules, optimizer, masked loss and accuracy."""

from keras_transformer.training.losses import (
    MaskedAccuracy,
    MaskedSequenceAccuracy,
    MaskedSparseCategoricalCrossentropy,
)
from keras_transformer.training.optimizer import make_optimizer, paper_adam
from keras_transformer.training.schedule import BudgetSchedule, TransformerSchedule

__all__ = ["BudgetSchedule", "MaskedAccuracy", "MaskedSequenceAccuracy",
           "MaskedSparseCategoricalCrossentropy",
           "TransformerSchedule", "make_optimizer", "paper_adam"]  # fmt: skip
