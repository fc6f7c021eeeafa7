"""Wall-clock time of one forward + backward step against the sequence length.

Operations are not time: a recurrent layer's `T` small steps run one after the other, while
self-attention's `T^2 d` multiply-adds run as a few large matrix products. Compare the shapes of
the curves on *this* machine; do not assert on them.
"""

import itertools
import time
from typing import Any

import numpy as np
import tensorflow as tf

from keras_transformer.analysis.complexity import _check, apply_layer, reference_layer
from keras_transformer.errors import UserInputError


def time_step(
    kind: str,
    length: int,
    d: int,
    *,
    batch: int = 1,
    repeats: int = 5,
    kernel_size: int = 3,
    num_heads: int = 1,
    seed: int = 0,
    statistic: str = "median",
) -> float:
    """Seconds of one compiled forward + backward pass of a `reference_layer`, after a warm-up.

    Args:
        kind, d, kernel_size, num_heads: as in `complexity.reference_layer`.
        length: sequence length `T`.
        batch: sequences per step.
        repeats: timed runs after the warm-up.
        seed: seed of the random input.
        statistic: `"median"` of the runs, or `"min"`: other work on the machine only makes
            a run slower, so the fastest is the least disturbed (the tests' direction checks).

    Returns:
        Seconds (the `statistic` over `repeats`).

    Example:
    >>> time_step("convolution", 16, 8, repeats=2) > 0.0
    True
    """
    _check(length=length, d=d, batch=batch, repeats=repeats)
    if statistic not in ("median", "min"):
        raise UserInputError(f"statistic={statistic!r} is not supported; choose 'median' or 'min'")
    layer = reference_layer(kind, d, kernel_size, num_heads)
    x = tf.constant(np.random.default_rng(seed).standard_normal((batch, length, d)), tf.float32)
    apply_layer(layer, x)  # build
    variables = [v.value for v in layer.trainable_weights]

    def forward_backward(inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = tf.reduce_sum(tf.square(apply_layer(layer, inputs)))
        return tape.gradient(loss, [inputs, *variables])

    # Traced once, explicitly, for this layer and this shape; calling the concrete function
    # skips tf.function's dispatch. A `tf.function` called per (kind, length) would retrace
    # every time, and TensorFlow warns about "retracing" from the fifth call of a sweep.
    step = tf.function(forward_backward).get_concrete_function(tf.TensorSpec(x.shape, x.dtype))
    step(x)  # warm-up: first run
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        step(x)[0].numpy()  # wait for the result
        seconds.append(time.perf_counter() - start)
    return float(np.median(seconds) if statistic == "median" else np.min(seconds))


def timing_sweep(
    kinds: tuple[str, ...], lengths: list[int], d: int, **kwargs: Any
) -> dict[str, list[float]]:
    """`time_step` for every kind at every length, all in this process.

    Args:
        kinds: layer kinds, e.g. `("self_attention", "lstm", "convolution")`.
        lengths: sequence lengths, increasing.
        d: model width.
        **kwargs: passed to `time_step` (`batch`, `repeats`, ...).

    Returns:
        `{kind: [seconds per length]}`.

    Example:
    >>> len(timing_sweep(("convolution",), [8, 16], 4, repeats=1)["convolution"])
    2
    """
    return {kind: [time_step(kind, t, d, **kwargs) for t in lengths] for kind in kinds}


def fit_time_curve(lengths: list[int], seconds: list[float]) -> dict[str, float | None]:
    """Fits `seconds = a + b T + c T^2` and returns the length where `c T^2` overtakes `b T`.

    By operation count that is `T = 2 d`; measured, usually later (the large projections run
    closer to peak than the softmax). The fit minimizes the *relative* error with `a, b, c >= 0`.

    Args:
        lengths: sequence lengths (at least 3).
        seconds: measured times, all > 0.

    Returns:
        `{"a": ..., "b": ..., "c": ..., "quadratic_overtakes_linear_at": b / c}`,
        the last `None` when the best fit has no quadratic or no linear term.

    Example:
    >>> T = np.array([100, 200, 400, 800])
    >>> fit = fit_time_curve(T, 1e-3 + 2e-6 * T + 1e-8 * T**2)
    >>> round(fit["quadratic_overtakes_linear_at"])
    200
    """
    x, y = (np.asarray(values, dtype="float64") for values in (lengths, seconds))
    if x.shape[0] < 3 or x.shape != y.shape:
        raise ValueError(
            f"need at least 3 (length, seconds) pairs of equal count; got {x.shape[0]} "
            f"lengths and {y.shape[0]} times"
        )
    if np.any(y <= 0):
        raise ValueError(f"seconds={list(seconds)} must all be > 0")
    design = np.stack([np.ones_like(x), x, x * x], axis=1) / y[:, None]  # relative error
    target = np.ones_like(y)
    best_error, best = np.inf, np.zeros(3)
    for size in (1, 2, 3):
        for columns in itertools.combinations(range(3), size):
            coefficients = np.linalg.lstsq(design[:, columns], target, rcond=None)[0]
            full = np.zeros(3)
            full[list(columns)] = coefficients
            error = float(np.sum((design @ full - target) ** 2))
            if not np.any(coefficients < 0) and error < best_error - 1e-15:
                best_error, best = error, full
    a, b, c = (float(v) for v in best)
    crossover = b / c if b > 0 and c > 0 else None
    return {"a": a, "b": b, "c": c, "quadratic_overtakes_linear_at": crossover}


def first_length_slower(
    lengths: list[int], seconds: list[float], reference: list[float]
) -> int | None:
    """The first length from which `seconds` stays above `reference` (None if never).

    Example:
    >>> first_length_slower([1, 2, 3, 4], [1.0, 2.0, 5.0, 9.0], [3.0, 3.0, 3.0, 3.0])
    3
    """
    above = [s > r for s, r in zip(seconds, reference, strict=True)]
    first = next((i for i in range(len(above)) if all(above[i:])), None)
    return None if first is None else int(lengths[first])
