"""The paper's optimizer: Adam on the warm-up schedule (section 5.3)."""

import numbers
from typing import Any

import keras

from keras_transformer._validation import check_number
from keras_transformer.errors import UserInputError
from keras_transformer.training.schedule import TransformerSchedule

__all__ = ["make_optimizer", "paper_adam"]


def make_optimizer(
    d_model: int, warmup_steps: int = 4000, *, scale: float = 1.0, **adam_kwargs: Any
) -> keras.optimizers.Adam:
    """Adam with beta_1=0.9, beta_2=0.98, epsilon=1e-9 on a `TransformerSchedule`.

    Args:
        d_model: int > 0, the model width (`TransformerSchedule`).
        warmup_steps: int > 0, warm-up steps (`TransformerSchedule`).
        scale: float > 0, a multiplier on the schedule.
        **adam_kwargs: other `keras.optimizers.Adam` arguments (not `learning_rate`).

    Returns:
        A `keras.optimizers.Adam` whose learning rate is a `TransformerSchedule`.

    Example:
    >>> optimizer = make_optimizer(d_model=128, warmup_steps=4000)
    >>> optimizer.beta_2, optimizer.epsilon, float(optimizer.learning_rate) > 0.0  # step 1 > 0
    (0.98, 1e-09, True)

    Reference:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, section 5.3.
    """
    if "learning_rate" in adam_kwargs:
        raise UserInputError(
            f"learning_rate={adam_kwargs['learning_rate']!r} cannot be passed to "
            "make_optimizer: the rate comes from TransformerSchedule(d_model, "
            "warmup_steps, scale). Change d_model, warmup_steps or scale instead, or "
            "build keras.optimizers.Adam(learning_rate=...) yourself."
        )
    return paper_adam(TransformerSchedule(d_model, warmup_steps, scale), **adam_kwargs)


def paper_adam(learning_rate: Any, **adam_kwargs: Any) -> keras.optimizers.Adam:
    """Adam with the paper's beta_1=0.9, beta_2=0.98, epsilon=1e-9 at any learning rate.

    Args:
        learning_rate: a float > 0 or a `keras.optimizers.schedules.LearningRateSchedule`.
        **adam_kwargs: other arguments of `keras.optimizers.Adam`.

    Example:
    >>> optimizer = paper_adam(3e-4)
    >>> round(float(optimizer.learning_rate), 6), optimizer.beta_2
    (0.0003, 0.98)
    """
    if isinstance(learning_rate, numbers.Real):  # else a schedule
        check_number("learning_rate", learning_rate, 0.0, open_minimum=True)
    options = {"beta_1": 0.9, "beta_2": 0.98, "epsilon": 1e-9, **adam_kwargs}
    return keras.optimizers.Adam(learning_rate=learning_rate, **options)
