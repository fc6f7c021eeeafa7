"""Table 1 of the paper as formulas: parameters, operations, sequential steps, path length.

For a layer that maps a sequence of `T` vectors of size `d` to `T` vectors of
size `d`, the paper (Table 1) and the course compare

| layer          | parameters | operations   | sequential steps | maximum path length |
|----------------|------------|--------------|------------------|---------------------|
| self-attention | O(d^2)     | O(T^2 d)     | O(1)             | O(1)                |
| recurrent      | O(d^2)     | O(T d^2)     | O(T)             | O(T)                |
| convolutional  | O(k d^2)   | O(T k d^2)   | O(1)             | O(T / k)            |

(the paper's "complexity per layer" column leaves out the `O(T d^2)` Q, K, V
and output projections of attention, which are here in the exact counts). Each
row is also given *exactly* for the concrete Keras layer that
`reference_layer` builds, so every formula can be checked against a layer:
`count_params()` for the parameters, the traced graph for the operations
(`keras_transformer.analysis.operations`), gradients for the path length
(`keras_transformer.analysis.gradients`).

Counting conventions: a multiply-add is 2 floating-point operations (FLOPs);
only matrix products and convolutions are counted (softmax, activations,
biases and norms are O(T d) and left out); the batch size is 1. Note that the
parameter count of self-attention does not depend on `T`: the same four
`d x d` projections serve every position (some versions of the course notes
write O(T d^2); a built layer shows otherwise).
"""

from __future__ import annotations

import math
from typing import Any

import keras

from keras_transformer._validation import check_divisible, check_positive_int

LAYER_KINDS: tuple[str, ...] = ("self_attention", "rnn", "lstm", "gru", "convolution")
"""The layer kinds the formulas (and `reference_layer`) know."""

_RECURRENT_GATES = {"rnn": 1, "gru": 3, "lstm": 4}


def _check_kind(kind: str) -> None:
    if kind not in LAYER_KINDS:
        raise ValueError(f"kind={kind!r} is not a known layer kind; choose one of {LAYER_KINDS}")


def layer_parameters(kind: str, d: int, kernel_size: int = 3) -> int:
    """Exact parameter count of `reference_layer(kind, d, kernel_size)`.

    - self-attention: Q, K, V and output projections `d x d` with biases,
      `4 d^2 + 4 d` (for any number of heads of size `d / h`);
    - simple RNN: input and recurrent matrices and a bias, `2 d^2 + d`;
    - LSTM: four gates of that, `8 d^2 + 4 d`;
    - GRU (Keras' `reset_after=True`): three gates, two biases each, `6 d^2 + 6 d`;
    - convolution: `k` taps of `d x d` and a bias, `k d^2 + d`.

    None depends on the sequence length `T`.

    Args:
        kind: one of `LAYER_KINDS`.
        d: model width (input and output size).
        kernel_size: convolution width `k` (used by `"convolution"` only).

    Returns:
        The number of weights.

    Example:

    >>> layer_parameters("self_attention", 512), layer_parameters("lstm", 512)
    (1050624, 2099200)
    """
    _check_kind(kind)
    check_positive_int("d", d)
    check_positive_int("kernel_size", kernel_size)
    if kind == "self_attention":
        return 4 * d * d + 4 * d
    if kind == "convolution":
        return kernel_size * d * d + d
    gates = _RECURRENT_GATES[kind]
    biases = 2 if kind == "gru" else 1
    return gates * (2 * d * d + biases * d)


def layer_flops(kind: str, length: int, d: int, kernel_size: int = 3) -> int:
    """Exact forward FLOPs (2 per multiply-add) of the layer's matrix products, batch 1.

    - self-attention: projections `4 T d^2` plus scores `Q K^T` and the
      weighted sum of values, `T^2 d` each: `2 (4 T d^2 + 2 T^2 d)`;
    - simple RNN / GRU / LSTM: `T` steps of `gates` products of `d x d` with
      the input and with the state: `2 * gates * 2 T d^2`;
    - convolution: `T` outputs of `k d^2`: `2 T k d^2`.

    Args:
        kind: one of `LAYER_KINDS`.
        length: sequence length `T`.
        d: model width.
        kernel_size: convolution width `k`.

    Returns:
        FLOPs of one forward pass on one sequence.

    Example:

    >>> layer_flops("self_attention", 8, 4), layer_flops("rnn", 8, 4)
    (2048, 512)
    """
    _check_kind(kind)
    for name, value in (("length", length), ("d", d), ("kernel_size", kernel_size)):
        check_positive_int(name, value)
    if kind == "self_attention":
        macs = 4 * length * d * d + 2 * length * length * d
    elif kind == "convolution":
        macs = length * kernel_size * d * d
    else:
        macs = _RECURRENT_GATES[kind] * 2 * length * d * d
    return 2 * macs


def table_operations(kind: str, length: int, d: int, kernel_size: int = 3) -> int:
    """The leading term of Table 1's "complexity per layer": `T^2 d`, `T d^2` or `k T d^2`.

    Example:

    >>> table_operations("self_attention", 10, 64), table_operations("rnn", 10, 64)
    (6400, 40960)
    """
    _check_kind(kind)
    if kind == "self_attention":
        return length * length * d
    if kind == "convolution":
        return kernel_size * length * d * d
    return length * d * d


def sequential_steps(kind: str, length: int) -> int:
    """Operations that must run one after another: `T` for a recurrent layer, else 1.

    A recurrent layer cannot compute `h_t` before `h_{t-1}`; attention and
    convolution compute every position at once.

    Example:

    >>> sequential_steps("lstm", 50), sequential_steps("self_attention", 50)
    (50, 1)
    """
    _check_kind(kind)
    check_positive_int("length", length)
    return length if kind in _RECURRENT_GATES else 1


def maximum_path_length(kind: str, length: int, kernel_size: int = 3) -> int:
    """Layers (or steps) a signal crosses between the two ends of a length-`T` sequence.

    Self-attention connects every pair of positions in 1; a recurrent layer
    carries position 1 to position `T` through `T - 1` steps; contiguous
    convolutions of width `k` widen the receptive field by `k - 1` per layer,
    so `ceil((T - 1) / (k - 1))` stacked layers are needed (the paper's
    O(n / k); dilated convolutions would give O(log_k n)).

    Example:

    >>> [maximum_path_length(k, 65) for k in ("self_attention", "rnn", "convolution")]
    [1, 64, 32]
    """
    _check_kind(kind)
    check_positive_int("length", length)
    check_positive_int("kernel_size", kernel_size)
    if length == 1:
        return 0
    if kind == "self_attention":
        return 1
    if kind == "convolution":
        if kernel_size == 1:
            raise ValueError(
                "kernel_size=1 never connects two positions; use kernel_size >= 2 for the "
                "path length of a convolution"
            )
        return math.ceil((length - 1) / (kernel_size - 1))
    return length - 1


_ORDERS = {
    "self_attention": ("O(d^2)", "O(T^2 d)", "O(1)", "O(1)"),
    "convolution": ("O(k d^2)", "O(T k d^2)", "O(1)", "O(T/k)"),
}
_RECURRENT_ORDERS = ("O(d^2)", "O(T d^2)", "O(T)", "O(T)")


def complexity_table(
    length: int, d: int, kernel_size: int = 3, kinds: tuple[str, ...] = LAYER_KINDS
) -> list[dict[str, Any]]:
    """Table 1 of the paper at concrete sizes, one row (a dict) per layer kind.

    Args:
        length: sequence length `T`.
        d: model width.
        kernel_size: convolution width `k`.
        kinds: the rows, from `LAYER_KINDS`.

    Returns:
        A list of dicts with keys `layer`, `parameters`, `flops` (exact, see
        `layer_flops`), `table_operations` (Table 1's leading term),
        `sequential_steps`, `maximum_path_length` and the big-O column
        strings `parameters_order`, `operations_order`, `sequential_order`,
        `path_order`.

    Example:

    >>> rows = complexity_table(100, 512, kinds=("self_attention", "rnn"))
    >>> [(r["layer"], r["table_operations"], r["sequential_steps"]) for r in rows]
    [('self_attention', 5120000, 1), ('rnn', 26214400, 100)]
    """
    rows = []
    for kind in kinds:
        orders = _ORDERS.get(kind, _RECURRENT_ORDERS)
        rows.append(
            {
                "layer": kind,
                "parameters": layer_parameters(kind, d, kernel_size),
                "flops": layer_flops(kind, length, d, kernel_size),
                "table_operations": table_operations(kind, length, d, kernel_size),
                "sequential_steps": sequential_steps(kind, length),
                "maximum_path_length": maximum_path_length(kind, length, kernel_size),
                "parameters_order": orders[0],
                "operations_order": orders[1],
                "sequential_order": orders[2],
                "path_order": orders[3],
            }
        )
    return rows


def operations_crossover(d: int, rnn: str = "rnn", *, exact: bool = False) -> float:
    """Sequence length at which self-attention's operations equal a recurrent layer's.

    With Table 1's leading terms, `T^2 d = T d^2` at `T = d`: attention does
    fewer operations than an RNN for sentences shorter than the model width.
    With `exact=True` the attention projections (`4 T d^2` multiply-adds) and
    the recurrent gates count too: `4 T d^2 + 2 T^2 d = 2 g T d^2` gives
    `T = (g - 2) d` for `g` gates, i.e. `2 d` against an LSTM and `d` against
    a GRU, while a simple RNN (`g = 1`) is cheaper at every length (returned
    as 0: attention is never cheaper).

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
        raise ValueError(f"rnn={rnn!r} must be one of {tuple(_RECURRENT_GATES)}")
    if not exact:
        return float(d)
    return float(max(_RECURRENT_GATES[rnn] - 2, 0) * d)


def reference_layer(
    kind: str, d: int, kernel_size: int = 3, num_heads: int = 1, **kwargs: Any
) -> keras.layers.Layer:
    """The Keras layer whose exact costs the formulas of this module give.

    - `"self_attention"`: the package's from-scratch `MultiHeadAttention`
      with `num_heads` heads of size `d / num_heads`, to be called as `layer(x, x)`;
    - `"rnn"`, `"lstm"`, `"gru"`: `keras.layers.SimpleRNN` / `LSTM` / `GRU`
      with `d` units returning the whole sequence;
    - `"convolution"`: `keras.layers.Conv1D(d, kernel_size, padding="same")`.

    Args:
        kind: one of `LAYER_KINDS`.
        d: model width.
        kernel_size: convolution width.
        num_heads: attention heads (must divide `d`).
        **kwargs: passed to the layer (e.g. `unroll=True` for a recurrent layer).

    Returns:
        An unbuilt layer; call it on `(batch, T, d)` inputs.

    Example:

    >>> import numpy as np
    >>> layer = reference_layer("convolution", 8, kernel_size=5)
    >>> _ = layer(np.zeros((1, 10, 8), "float32"))
    >>> layer.count_params() == layer_parameters("convolution", 8, kernel_size=5)
    True
    """
    _check_kind(kind)
    check_positive_int("d", d)
    if kind == "self_attention":
        from keras_transformer.layers import MultiHeadAttention

        check_positive_int("num_heads", num_heads)
        check_divisible(d, num_heads)
        return MultiHeadAttention(num_heads=num_heads, key_dim=d // num_heads, **kwargs)
    if kind == "convolution":
        check_positive_int("kernel_size", kernel_size)
        return keras.layers.Conv1D(d, kernel_size, padding="same", **kwargs)
    layer_class = {
        "rnn": keras.layers.SimpleRNN,
        "lstm": keras.layers.LSTM,
        "gru": keras.layers.GRU,
    }[kind]
    return layer_class(d, return_sequences=True, **kwargs)


def apply_layer(layer: keras.layers.Layer, inputs: Any) -> Any:
    """Calls a `reference_layer` on `(batch, T, d)` inputs (self-attention as `layer(x, x)`).

    Example:

    >>> import numpy as np
    >>> x = np.zeros((1, 5, 8), "float32")
    >>> tuple(apply_layer(reference_layer("self_attention", 8, num_heads=2), x).shape)
    (1, 5, 8)
    """
    from keras_transformer.layers import MultiHeadAttention

    if isinstance(layer, MultiHeadAttention):
        return layer(inputs, inputs)
    return layer(inputs)
