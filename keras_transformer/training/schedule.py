"""The learning-rate schedule of "Attention Is All You Need" (section 5.3)."""

import math
import numbers
from typing import Any

import keras
from keras import ops

__all__ = ["TransformerSchedule"]


def _check_positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise ValueError(
            f"{name}={value!r} must be a positive integer; pass e.g. {name}=512 for d_model "
            f"or {name}=4000 for warmup_steps."
        )
    return int(value)


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
        self.d_model = _check_positive_int("d_model", d_model)
        self.warmup_steps = _check_positive_int("warmup_steps", warmup_steps)
        bad = isinstance(scale, bool) or not isinstance(scale, numbers.Real)
        if bad or not math.isfinite(scale) or scale <= 0:
            raise ValueError(
                f"scale={scale!r} must be a finite number > 0; pass scale=1.0 for the "
                "paper's schedule, or e.g. scale=2.0 to double every learning rate."
            )
        self.scale = float(scale)

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
