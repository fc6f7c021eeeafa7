"""Training pieces of the paper: learning-rate schedules, optimizer, masked loss and accuracy;
and the whole job of `keras-transformer train`: `train(TrainConfig(...))`.

The names load on first use (PEP 562), so `keras_transformer.training.config` (the run settings,
read by `keras-transformer train --help`) imports without Keras or TensorFlow.
"""

from keras_transformer._lazy import lazy_names

_HOMES = {
    "BudgetSchedule": "schedule",
    "MaskedAccuracy": "losses",
    "MaskedSequenceAccuracy": "losses",
    "MaskedSparseCategoricalCrossentropy": "losses",
    "TrainConfig": "config",
    "TransformerSchedule": "schedule",
    "make_optimizer": "optimizer",
    "paper_adam": "optimizer",
    "train": "run",
}

__all__ = sorted(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
