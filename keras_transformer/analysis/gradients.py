"""Path length measured through gradients: how much the last output feels each input.

From output `T` to input `t` the gradient crosses `T - t` Jacobians of a recurrent layer (its
norm shrinks or grows geometrically), one of self-attention; zero beyond a CNN's receptive field.
"""

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer.analysis.complexity import _RECURRENT_LAYERS, _check
from keras_transformer.errors import UserInputError

GRADIENT_KINDS: tuple[str, ...] = ("rnn", "lstm", "gru", "transformer", "cnn")
"""Models `gradient_norms` knows: RNN, LSTM, GRU, one Transformer encoder layer, causal CNN."""


def gradient_model(
    kind: str, d: int, *, num_heads: int = 2, kernel_size: int = 3, conv_layers: int = 2
) -> keras.layers.Layer:
    """The layer whose input-to-output gradients `gradient_norms` measures.

    Keras' `SimpleRNN` / `LSTM` / `GRU`, the package's post-LN `EncoderLayer` without dropout,
    or `conv_layers` causal `Conv1D(d, kernel_size)` with ReLU and residuals.

    Args:
        kind: one of `GRADIENT_KINDS`.
        d: model width.
        num_heads: attention heads of the Transformer layer.
        kernel_size: convolution width.
        conv_layers: stacked convolutions of the CNN.

    Returns:
        A layer mapping `(batch, T, d)` to `(batch, T, d)`.

    Example:
    >>> tuple(gradient_model("cnn", 4)(np.zeros((1, 6, 4), "float32")).shape)
    (1, 6, 4)
    """
    _check(d=d)
    if kind in _RECURRENT_LAYERS:
        return getattr(keras.layers, _RECURRENT_LAYERS[kind])(d, return_sequences=True, name=kind)
    if kind == "transformer":
        from keras_transformer.layers import EncoderLayer

        return EncoderLayer(num_heads=num_heads, dff=2 * d, dropout=0.0, name="transformer")
    if kind == "cnn":
        _check(conv_layers=conv_layers, kernel_size=kernel_size)
        inputs = x = keras.Input((None, d))
        options = dict(padding="causal", activation="relu")
        for i in range(conv_layers):
            conv = keras.layers.Conv1D(d, kernel_size, name=f"conv_{i}", **options)
            x = keras.layers.Add(name=f"residual_{i}")([x, conv(x)])
        return keras.Model(inputs, x, name="cnn")
    raise UserInputError(f"kind={kind!r} is not supported; choose one of {GRADIENT_KINDS}")


def gradient_norms(
    kind: str, length: int, d: int = 32, *, seeds: int = 3, batch: int = 1, **model_kwargs: Any
) -> np.ndarray:
    """Mean `|| d (u . y_T) / d x_t ||` over random inputs `x` and unit vectors `u`, at every `t`.

    Args:
        kind, d: as in `gradient_model`.
        length: sequence length `T`.
        seeds: draws of weights, inputs and `u`; the norms are averaged over them (and `batch`).
        batch: sequences per draw.
        **model_kwargs: passed to `gradient_model` (`num_heads`, `kernel_size`, `conv_layers`).

    Returns:
        float64 array `(length,)`: entry `j` is the mean norm at distance `j = T - t`.

    Example:
    >>> norms = gradient_norms("cnn", 8, d=4, seeds=1, kernel_size=2, conv_layers=2)
    >>> bool(np.all(norms[3:] == 0.0)), bool(np.all(norms[:3] > 0.0))  # receptive field 3
    (True, True)
    """
    _check(length=length, seeds=seeds, batch=batch)
    if kind not in GRADIENT_KINDS:
        raise UserInputError(f"kind={kind!r} is not supported; choose one of {GRADIENT_KINDS}")
    total = np.zeros(length)
    for seed in range(seeds):
        keras.utils.set_random_seed(seed)
        layer = gradient_model(kind, d, **model_kwargs)
        rng = np.random.default_rng(seed)
        x = tf.constant(rng.standard_normal((batch, length, d)), tf.float32)
        u = rng.standard_normal((batch, d))
        u = tf.constant(u / np.linalg.norm(u, axis=-1, keepdims=True), tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=False)  # (batch, T, d)
            projected = tf.reduce_sum(y[:, -1, :] * u)  # sum over batch of u . y_T
        norms = tf.norm(tape.gradient(projected, x), axis=-1).numpy().mean(axis=0)  # (T,) by t
        total += norms[::-1]  # by distance T - t
    return total / seeds


def decay_ratio(norms: np.ndarray) -> float:
    """Gradient norm at the largest distance over the norm at distance 1.

    Distance 0 is left out: in a residual layer it includes the identity path from `x_T`.

    Example:
    >>> decay_ratio(np.array([5.0, 1.0, 0.5, 0.25]))
    0.25
    """
    norms = np.asarray(norms, dtype="float64")
    if norms.shape[0] < 3:
        raise ValueError(f"norms has length {norms.shape[0]}; need a length of at least 3")
    return 0.0 if norms[1] == 0 else float(norms[-1] / norms[1])


def gradient_curves(
    kinds: tuple[str, ...], length: int, d: int = 32, *, seeds: int = 3, **model_kwargs: Any
) -> dict[str, dict[str, Any]]:
    """`gradient_norms` and `decay_ratio` for several kinds.

    Returns:
        `{kind: {"distance": [0..T-1], "norm": [...], "decay_ratio": float}}`.

    Example:
    >>> gradient_curves(("rnn",), 5, d=4, seeds=1)["rnn"]["distance"]
    [0, 1, 2, 3, 4]
    """
    norms = {kind: gradient_norms(kind, length, d, seeds=seeds, **model_kwargs) for kind in kinds}
    return {
        kind: {"distance": list(range(length)), "norm": n.tolist(), "decay_ratio": decay_ratio(n)}
        for kind, n in norms.items()
    }
