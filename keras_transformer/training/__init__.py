"""Training pieces of the paper: learning-rate schedules, optimizer, masked loss and accuracy.

The names load on first use (PEP 562), so `keras_transformer.training.config` (the run settings,
read by `keras-transformer train --help`) imports without Keras or TensorFlow.
"""

import importlib

_HOMES = {
    "BudgetSchedule": "schedule",
    "MaskedAccuracy": "losses",
    "MaskedSequenceAccuracy": "losses",
    "MaskedSparseCategoricalCrossentropy": "losses",
    "TransformerSchedule": "schedule",
    "make_optimizer": "optimizer",
    "paper_adam": "optimizer",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        value = getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_HOMES])
