"""Learning-rate schedules: the paper's (section 5.3) and the planned one of a budgeted run.

`TransformerSchedule` warms up, then decays as `1/sqrt(step)`; `BudgetSchedule` warms up, then
decays along a cosine that ends on a step `callbacks.TimeBudget` can move while training, and
after that step holds a small rate, so that a `model.fit` on a loaded run keeps learning."""

import math
from typing import Any

import keras
from keras import ops

from keras_transformer._validation import check_number, check_positive_int

__all__ = ["BudgetSchedule", "TransformerSchedule"]


@keras.saving.register_keras_serializable(package="keras_transformer")
class TransformerSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up then inverse-square-root decay, times a constant `scale`:

        lrate = d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5)

    Keras iteration `i` is paper step `i + 1`, so the first rate is small but not 0 (the
    TensorFlow tutorial's is 0), and `schedule(warmup_steps - 1)` is the peak.

    Args:
        d_model: int > 0, the model width.
        warmup_steps: int > 0, linear warm-up steps (the paper's 4000).
        scale: float > 0, a multiplier on the whole curve (1.0 in the paper).

    Call arguments:
        step: scalar tensor, the 0-based optimizer iteration.

    Returns:
        Scalar float32 tensor, the learning rate for that iteration.

    Example:
    >>> schedule = TransformerSchedule(d_model=512, warmup_steps=4000)
    >>> float(schedule(3999)), float(schedule(0)) > 0.0  # the peak (512 * 4000) ** -0.5; lr > 0
    (0.000699, True)
    >>> optimizer = keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)

    Reference:
        Vaswani et al., "Attention Is All You Need", NeurIPS 2017, section 5.3.
    """

    def __init__(self, d_model: int, warmup_steps: int = 4000, scale: float = 1.0) -> None:
        super().__init__()
        self.d_model = check_positive_int("d_model", d_model)
        self.warmup_steps = check_positive_int("warmup_steps", warmup_steps)
        hint = " Pass scale=1.0 for the paper's schedule, or e.g. 2.0 to double every rate."
        self.scale = check_number("scale", scale, 0.0, open_minimum=True, hint=hint)

    @property
    def peak_learning_rate(self) -> float:
        """The largest rate, reached on paper step `warmup_steps`."""
        return self.scale * (self.d_model * self.warmup_steps) ** -0.5

    def __call__(self, step: Any) -> Any:
        step = ops.cast(step, "float32") + 1.0  # paper step = Keras iteration + 1
        warmup = step * (self.warmup_steps**-1.5)
        return (self.scale * self.d_model**-0.5) * ops.minimum(ops.rsqrt(step), warmup)

    def get_config(self) -> dict[str, Any]:
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}


@keras.saving.register_keras_serializable("keras_transformer")
class BudgetSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up, then cosine decay that ends on step `total_steps`, then a constant rate.

    After the warm-up, `rate = peak * (f + (1 - f) * (1 + cos(pi * p)) / 2)`, `f` being
    `final_fraction` and `p` the fraction of the decay done. `total_steps` is a variable.

    After `total_steps` the rate is `hold_fraction * peak`. A run's training ends on the decay's
    last step (`TimeBudget` keeps `total_steps` ahead of training), so this rate only serves a
    later `model.fit` of the saved model: `keras.models.load_model(run/model.keras).fit(...)`
    continues at 0.3 of the peak instead of at 0 (no recompiling). Pass `hold_fraction=0.0`
    for a rate that stays at its end value.

    Args:
        peak_learning_rate: float > 0, the rate at the end of the warm-up.
        warmup_steps: int > 0, steps of linear warm-up.
        total_steps: int > 0, the step where the decay ends (first estimate).
        final_fraction: float in [0, 1), the rate at the end as a fraction of the peak.
        hold_fraction: float in [0, 1], the rate after the end as a fraction of the peak.

    Call arguments:
        step: scalar 0-based optimizer iteration.

    Returns:
        Scalar float32 tensor, the learning rate.

    Example:
    >>> schedule = BudgetSchedule(1e-3, warmup_steps=10, total_steps=100)
    >>> round(float(schedule(9)), 6), round(float(schedule(99)), 6), round(float(schedule(100)), 6)
    (0.001, 0.0, 0.0003)
    """

    HOLD_FRACTION = 0.3
    """The default `hold_fraction`. Measured on a 30-second numbers run (peak 7e-4), four fits of
    ten batches after `load_model`: training loss 1.212 -> 1.113 at 0.3; 1.213 -> 1.165 at 0.1;
    at 1.0 (the peak) it first rose, 1.239 -> 1.251, before falling."""

    def __init__(
        self,
        peak_learning_rate: float,
        warmup_steps: int = 200,
        total_steps: int = 10_000,
        final_fraction: float = 0.0,
        hold_fraction: float = HOLD_FRACTION,
    ) -> None:
        super().__init__()
        self.peak_learning_rate = check_number(
            "peak_learning_rate", peak_learning_rate, 0.0, open_minimum=True
        )
        self.warmup_steps = check_positive_int("warmup_steps", warmup_steps)
        self._total = keras.Variable(
            0.0, dtype="float32", trainable=False, name="budget_total_steps"
        )
        self.set_total_steps(total_steps)
        self.final_fraction = check_number("final_fraction", final_fraction, 0.0, 1.0)
        hint = " It is the rate of a fit after the planned end, as a fraction of the peak."
        self.hold_fraction = check_number(
            "hold_fraction", hold_fraction, 0.0, 1.0, open_maximum=False, hint=hint
        )

    @property
    def total_steps(self) -> int:
        """The step where the decay ends (the current estimate)."""
        return int(round(float(ops.convert_to_numpy(self._total))))

    def set_total_steps(self, total_steps: int) -> None:
        """Moves the end of the decay (kept at least `warmup_steps + 1`)."""
        total_steps = check_positive_int("total_steps", total_steps)
        self._total.assign(float(max(total_steps, self.warmup_steps + 1)))

    def __call__(self, step: Any) -> Any:
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        progress = ops.clip((step - warmup) / ops.maximum(self._total - warmup, 1.0), 0.0, 1.0)
        cosine = 0.5 * (1.0 + ops.cos(math.pi * progress))
        falling = self.final_fraction + (1.0 - self.final_fraction) * cosine
        falling = ops.where(step > self._total, self.hold_fraction, falling)  # a later fit
        return self.peak_learning_rate * ops.where(step < warmup, step / warmup, falling)

    def get_config(self) -> dict[str, Any]:
        return {
            "peak_learning_rate": self.peak_learning_rate,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "final_fraction": self.final_fraction,
            "hold_fraction": self.hold_fraction,
        }
