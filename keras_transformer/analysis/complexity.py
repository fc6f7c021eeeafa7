"""Table 1 of the paper as formulas: parameters, operations, sequential steps, path length.

Exact for the layers `reference_layer` builds (checked against `count_params()` and the traced
graph). A multiply-add is 2 FLOPs; only matrix products and convolutions count; batch 1.
"""

import math
from typing import Any

import keras

from keras_transformer._validation import check_divisible, check_positive_int
from keras_transformer.errors import UserInputError

LAYER_KINDS: tuple[str, ...] = ("self_attention", "rnn", "lstm", "gru", "convolution")
"""The layer kinds the formulas (and `reference_layer`) know."""

_RECURRENT_GATES = {"rnn": 1, "gru": 3, "lstm": 4}
_RECURRENT_LAYERS = {"rnn": "SimpleRNN", "lstm": "LSTM", "gru": "GRU"}
_ORDERS = {
    "self_attention": ("O(d^2)", "O(T^2 d)", "O(1)", "O(1)"),
    "convolution": ("O(k d^2)", "O(T k d^2)", "O(1)", "O(T/k)"),
}
_RECURRENT_ORDERS = ("O(d^2)", "O(T d^2)", "O(T)", "O(T)")


def _check(kind: str | None = None, **positive: int) -> None:
    if kind is not None and kind not in LAYER_KINDS:
        raise UserInputError(
            f"kind={kind!r} is not a known layer kind; choose one of {LAYER_KINDS}"
        )
    for name, value in positive.items():
        check_positive_int(name, value)


def layer_parameters(kind: str, d: int, kernel_size: int = 3) -> int:
    """Exact parameter count of `reference_layer(kind, d, kernel_size)`; none depends on `T`.

    Self-attention `4 d^2 + 4 d` (Q, K, V, O with biases, any heads); simple RNN `2 d^2 + d`;
    LSTM `8 d^2 + 4 d`; GRU (`reset_after=True`) `6 d^2 + 6 d`; convolution `k d^2 + d`.

    Args:
        kind: one of `LAYER_KINDS`.
        d: model width (input and output size).
        kernel_size: convolution width `k`.

    Returns:
        The number of weights.

    Example:
    >>> layer_parameters("self_attention", 512), layer_parameters("lstm", 512)
    (1050624, 2099200)
    """
    _check(kind, d=d, kernel_size=kernel_size)
    if kind == "self_attention":
        return 4 * d * d + 4 * d
    if kind == "convolution":
        return kernel_size * d * d + d
    return _RECURRENT_GATES[kind] * (2 * d * d + (2 if kind == "gru" else 1) * d)


def layer_flops(kind: str, length: int, d: int, kernel_size: int = 3) -> int:
    """Exact forward FLOPs of the layer's matrix products on one sequence.

    Args:
        kind, d, kernel_size: as in `layer_parameters`.
        length: sequence length `T`.

    Returns:
        FLOPs of one forward pass.

    Example:
    >>> layer_flops("self_attention", 8, 4), layer_flops("rnn", 8, 4)
    (2048, 512)
    """
    _check(kind, length=length, d=d, kernel_size=kernel_size)
    if kind == "self_attention":
        return 2 * (4 * length * d * d + 2 * length * length * d)
    if kind == "convolution":
        return 2 * length * kernel_size * d * d
    return 2 * _RECURRENT_GATES[kind] * 2 * length * d * d


def table_operations(kind: str, length: int, d: int, kernel_size: int = 3) -> int:
    """The leading term of Table 1's "complexity per layer": `T^2 d`, `T d^2` or `k T d^2`.

    Example:
    >>> table_operations("self_attention", 10, 64), table_operations("rnn", 10, 64)
    (6400, 40960)
    """
    _check(kind)
    if kind == "self_attention":
        return length * length * d
    if kind == "convolution":
        return kernel_size * length * d * d
    return length * d * d


def sequential_steps(kind: str, length: int) -> int:
    """Operations that must run one after another: `T` for a recurrent layer, else 1.

    Example:
    >>> sequential_steps("lstm", 50), sequential_steps("self_attention", 50)
    (50, 1)
    """
    _check(kind, length=length)
    return length if kind in _RECURRENT_GATES else 1


def maximum_path_length(kind: str, length: int, kernel_size: int = 3) -> int:
    """Layers (or steps) a signal crosses between the two ends of a length-`T` sequence.

    Example:
    >>> [maximum_path_length(k, 65) for k in ("self_attention", "rnn", "convolution")]
    [1, 64, 32]
    """
    _check(kind, length=length, kernel_size=kernel_size)
    if length == 1:
        return 0
    if kind == "self_attention":
        return 1
    if kind == "convolution":
        if kernel_size == 1:
            raise UserInputError(
                "kernel_size=1 never connects two positions; use kernel_size >= 2 for the "
                "path length of a convolution"
            )
        return math.ceil((length - 1) / (kernel_size - 1))
    return length - 1


def complexity_table(
    length: int, d: int, kernel_size: int = 3, kinds: tuple[str, ...] = LAYER_KINDS
) -> list[dict[str, Any]]:
    """Table 1 of the paper at concrete sizes, one row (a dict) per layer kind.

    Args:
        length, d, kernel_size: as in `layer_flops`.
        kinds: the rows, from `LAYER_KINDS`.

    Returns:
        Dicts with `layer`, the counts of this module's functions and the big-O strings
        `parameters_order`, `operations_order`, `sequential_order`, `path_order`.

    Example:
    >>> rows = complexity_table(100, 512, kinds=("self_attention", "rnn"))
    >>> [(r["layer"], r["table_operations"], r["sequential_steps"]) for r in rows]
    [('self_attention', 5120000, 1), ('rnn', 26214400, 100)]
    """
    orders = ("parameters_order", "operations_order", "sequential_order", "path_order")
    return [
        {
            "layer": kind,
            "parameters": layer_parameters(kind, d, kernel_size),
            "flops": layer_flops(kind, length, d, kernel_size),
            "table_operations": table_operations(kind, length, d, kernel_size),
            "sequential_steps": sequential_steps(kind, length),
            "maximum_path_length": maximum_path_length(kind, length, kernel_size),
            **dict(zip(orders, _ORDERS.get(kind, _RECURRENT_ORDERS), strict=True)),
        }
        for kind in kinds
    ]


def operations_crossover(d: int, rnn: str = "rnn", *, exact: bool = False) -> float:
    """Sequence length at which self-attention's operations equal a recurrent layer's.

    Table 1's leading terms: `T^2 d = T d^2` at `T = d`. Whole layers (`exact=True`):
    `4 T d^2 + 2 T^2 d = 2 g T d^2` at `T = (g - 2) d` for `g` gates (0 for a simple RNN).

    Args:
        d: model width.
        rnn: `"rnn"`, `"gru"` or `"lstm"`.
        exact: count whole layers instead of Table 1's leading terms.

    Returns:
        The crossover length `T*` (attention cheaper below it).

    Example:
    >>> operations_crossover(512), operations_crossover(512, "lstm", exact=True)
    (512.0, 1024.0)
    """
    check_positive_int("d", d)
    if rnn not in _RECURRENT_GATES:
        raise UserInputError(f"rnn={rnn!r} must be one of {tuple(_RECURRENT_GATES)}")
    return float(max(_RECURRENT_GATES[rnn] - 2, 0) * d if exact else d)


def reference_layer(
    kind: str, d: int, kernel_size: int = 3, num_heads: int = 1, **kwargs: Any
) -> keras.layers.Layer:
    """The Keras layer whose exact costs the formulas of this module give.

    Args:
        kind, d, kernel_size: as in `layer_parameters`.
        num_heads: attention heads (must divide `d`).
        **kwargs: passed to the layer (e.g. `unroll=True` for a recurrent layer).

    Returns:
        An unbuilt layer for `(batch, T, d)` inputs: the package's `MultiHeadAttention`,
        `SimpleRNN` / `LSTM` / `GRU` returning sequences, or `Conv1D(d, k, padding="same")`.

    Example:
    >>> layer = reference_layer("convolution", 8, kernel_size=5)
    >>> _ = layer(keras.ops.zeros((1, 10, 8)))
    >>> layer.count_params() == layer_parameters("convolution", 8, kernel_size=5)
    True
    """
    _check(kind, d=d)
    if kind == "self_attention":
        from keras_transformer.layers import MultiHeadAttention

        check_positive_int("num_heads", num_heads)
        check_divisible(d, num_heads)
        return MultiHeadAttention(num_heads=num_heads, key_dim=d // num_heads, **kwargs)
    if kind == "convolution":
        check_positive_int("kernel_size", kernel_size)
        return keras.layers.Conv1D(d, kernel_size, padding="same", **kwargs)
    return getattr(keras.layers, _RECURRENT_LAYERS[kind])(d, return_sequences=True, **kwargs)


def apply_layer(layer: keras.layers.Layer, inputs: Any) -> Any:
    """Calls a `reference_layer` on `(batch, T, d)` inputs (self-attention as `layer(x, x)`).

    Example:
    >>> x = keras.ops.zeros((1, 5, 8))
    >>> tuple(apply_layer(reference_layer("self_attention", 8, num_heads=2), x).shape)
    (1, 5, 8)
    """
    from keras_transformer.layers import MultiHeadAttention

    return layer(inputs, inputs) if isinstance(layer, MultiHeadAttention) else layer(inputs)
