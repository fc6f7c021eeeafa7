"""Path length measured through gradients: how much the last output feels each input.

Backpropagation carries the loss gradient from the output at the last
position `T` back to the input at position `t` along the path between them.
In a recurrent layer that path crosses `T - t` steps, each multiplying the
gradient by a Jacobian, so its norm typically shrinks (vanishes) or grows
geometrically with the distance `T - t`; in self-attention every input is one
step from every output, so the norm does not depend on the distance; through
a stack of convolutions it is exactly zero beyond the receptive field.

`gradient_norms` measures `|| d (u . y_T) / d x_t ||` with `tf.GradientTape`
on random inputs `x` and a random unit vector `u`, for freshly initialized
layers, averaged over seeds (one backward pass per seed; the average of the
squared projection is the squared Frobenius norm of the Jacobian block
`d y_T / d x_t` divided by `d`).
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer._validation import check_positive_int

GRADIENT_KINDS: tuple[str, ...] = ("rnn", "lstm", "gru", "transformer", "cnn")
"""Models `gradient_norms` knows: simple RNN, LSTM, GRU, one Transformer encoder
layer, and a stack of causal convolutions."""


def gradient_model(
    kind: str,
    d: int,
    *,
    num_heads: int = 2,
    kernel_size: int = 3,
    conv_layers: int = 2,
) -> keras.layers.Layer:
    """The layer whose input-to-output gradients `gradient_norms` measures.

    - `"rnn"`, `"lstm"`, `"gru"`: `keras.layers.SimpleRNN` / `LSTM` / `GRU` with
      `d` units (Keras' default initializers: orthogonal recurrent matrix,
      LSTM forget-gate bias 1);
    - `"transformer"`: the package's `EncoderLayer` (self-attention +
      feed-forward, post-LN, no dropout);
    - `"cnn"`: `conv_layers` causal `Conv1D(d, kernel_size)` layers with ReLU
      and residual connections.

    Args:
        kind: one of `GRADIENT_KINDS`.
        d: model width.
        num_heads: attention heads of the Transformer layer.
        kernel_size: convolution width.
        conv_layers: stacked convolutions of the CNN.

    Returns:
        A layer mapping `(batch, T, d)` to `(batch, T, d)`.

    Example:

    >>> import numpy as np
    >>> tuple(gradient_model("cnn", 4)(np.zeros((1, 6, 4), "float32")).shape)
    (1, 6, 4)
    """
    check_positive_int("d", d)
    if kind in ("rnn", "lstm", "gru"):
        layer_class = {
            "rnn": keras.layers.SimpleRNN,
            "lstm": keras.layers.LSTM,
            "gru": keras.layers.GRU,
        }[kind]
        return layer_class(d, return_sequences=True, name=kind)
    if kind == "transformer":
        from keras_transformer.layers import EncoderLayer

        return EncoderLayer(num_heads=num_heads, dff=2 * d, dropout=0.0, name="transformer")
    if kind == "cnn":
        check_positive_int("conv_layers", conv_layers)
        check_positive_int("kernel_size", kernel_size)
        inputs = keras.Input((None, d))
        x = inputs
        for i in range(conv_layers):
            c = keras.layers.Conv1D(
                d, kernel_size, padding="causal", activation="relu", name=f"conv_{i}"
            )(x)
            x = keras.layers.Add(name=f"residual_{i}")([x, c])
        return keras.Model(inputs, x, name="cnn")
    raise ValueError(f"kind={kind!r} is not supported; choose one of {GRADIENT_KINDS}")


def gradient_norms(
    kind: str,
    length: int,
    d: int = 32,
    *,
    seeds: int = 3,
    batch: int = 1,
    **model_kwargs: Any,
) -> np.ndarray:
    """Mean norm of the gradient of the last output with respect to every input position.

    Args:
        kind: one of `GRADIENT_KINDS`.
        length: sequence length `T`.
        d: model width.
        seeds: independent draws of weights, inputs and projection `u`; the
            norms are averaged over them (and over `batch`).
        batch: sequences per draw.
        **model_kwargs: passed to `gradient_model` (`num_heads`, `kernel_size`,
            `conv_layers`).

    Returns:
        float64 array `(length,)`; entry `j` is the mean
        `|| d (u . y_T) / d x_{T-j} ||` at distance `j = T - t` (0: the last
        input itself).

    Example:

    >>> norms = gradient_norms("cnn", 8, d=4, seeds=1, kernel_size=2, conv_layers=2)
    >>> bool(np.all(norms[3:] == 0.0)), bool(np.all(norms[:3] > 0.0))  # receptive field 3
    (True, True)
    """
    check_positive_int("length", length)
    check_positive_int("seeds", seeds)
    check_positive_int("batch", batch)
    if kind not in GRADIENT_KINDS:
        raise ValueError(f"kind={kind!r} is not supported; choose one of {GRADIENT_KINDS}")
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
        grad = tape.gradient(projected, x)  # (batch, T, d)
        norms = tf.norm(grad, axis=-1).numpy().mean(axis=0)  # (T,) by position t
        total += norms[::-1]  # by distance T - t
    return total / seeds


def decay_ratio(norms: np.ndarray) -> float:
    """Gradient norm at the largest distance over the norm at distance 1.

    Distance 0 is left out of the reference because in a residual layer it
    includes the identity path from `x_T` to `y_T`. A ratio near 1 means the
    farthest input is felt as strongly as a neighbour; near 0, its gradient vanished.

    Example:

    >>> decay_ratio(np.array([5.0, 1.0, 0.5, 0.25]))
    0.25
    """
    norms = np.asarray(norms, dtype="float64")
    if norms.shape[0] < 3:
        raise ValueError(f"norms has length {norms.shape[0]}; need a length of at least 3")
    if norms[1] == 0:
        return 0.0
    return float(norms[-1] / norms[1])


def gradient_curves(
    kinds: tuple[str, ...], length: int, d: int = 32, *, seeds: int = 3, **model_kwargs: Any
) -> dict[str, dict[str, Any]]:
    """`gradient_norms` and `decay_ratio` for several kinds.

    Returns:
        `{kind: {"distance": [0..T-1], "norm": [...], "decay_ratio": float}}`.

    Example:

    >>> curves = gradient_curves(("rnn",), 5, d=4, seeds=1)
    >>> curves["rnn"]["distance"]
    [0, 1, 2, 3, 4]
    """
    curves = {}
    for kind in kinds:
        norms = gradient_norms(kind, length, d, seeds=seeds, **model_kwargs)
        curves[kind] = {
            "distance": list(range(length)),
            "norm": [float(v) for v in norms],
            "decay_ratio": decay_ratio(norms),
        }
    return curves
