"""Measured operations and sequential steps, read from TensorFlow's traced graph.

Every `MatMul`, `BatchMatMulV2` (Keras' `einsum`) and `Conv2D` (`Conv1D`) traced on a `(1, T, d)`
input counts. Recurrent layers are traced with `unroll=True`: a `tf.while_loop` would hide their
`T` steps in one op (from `tf.compat.v1.profiler` too); `count_recurrent_steps` counts the loop's.
"""

import warnings
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer._validation import check_positive_int
from keras_transformer.analysis.complexity import _RECURRENT_LAYERS, apply_layer, reference_layer
from keras_transformer.errors import UserInputError

_PRODUCT_OPS = ("MatMul", "BatchMatMulV2", "BatchMatMul", "BatchMatMulV3", "Conv2D")


def trace_graph(fn: Callable[[tf.Tensor], Any], input_shape: tuple[int, ...]) -> tf.Graph:
    """The graph of `fn` traced on a float32 input of static `input_shape`.

    Example:
    >>> graph = trace_graph(lambda x: tf.matmul(x, x), (3, 3))
    >>> [op.type for op in graph.get_operations()][-2:]
    ['MatMul', 'Identity']
    """
    return tf.function(fn).get_concrete_function(tf.TensorSpec(input_shape, tf.float32)).graph


def op_flops(op: tf.Operation) -> int:
    """FLOPs of one graph op: `2 * output elements * contracted size` for products, else 0.

    Args:
        op: a `tf.Operation` with static shapes.

    Returns:
        FLOPs (multiply-add = 2); 0 for ops that are not matrix products or convolutions.

    Example:
    >>> graph = trace_graph(lambda x: tf.matmul(x, tf.ones((3, 5))), (2, 3))
    >>> sum(op_flops(op) for op in graph.get_operations())  # 2 * (2 * 5) * 3
    60
    """
    if op.type not in _PRODUCT_OPS:
        return 0
    output = op.outputs[0].shape
    if not output.is_fully_defined():
        raise ValueError(
            f"op {op.name} ({op.type}) has output shape {output}; trace with a fully "
            "static input_shape (batch and length included)"
        )
    elements = int(np.prod(output.as_list()))
    first, second = (tensor.shape.as_list() for tensor in op.inputs[:2])
    if op.type == "Conv2D":
        return 2 * elements * int(np.prod(second[:3]))  # filter (h, w, in, out)
    transposed = op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x")
    return 2 * elements * (first[-2] if transposed else first[-1])


def count_flops(graph: tf.Graph) -> int:
    """Total FLOPs of the matrix products and convolutions in `graph` (see `op_flops`).

    Example:
    >>> count_flops(trace_graph(lambda x: tf.matmul(x, x), (4, 4)))
    128
    """
    return sum(op_flops(op) for op in graph.get_operations())


def critical_path(graph: tf.Graph) -> int:
    """The most matrix products / convolutions on one chain of data dependencies (in sequence).

    Example:
    >>> critical_path(trace_graph(lambda x: tf.matmul(tf.matmul(x, x), x), (2, 2)))  # in sequence
    2
    """
    depth: dict[str, int] = {}
    for op in graph.get_operations():  # creation order is a topological order
        before = max((depth.get(t.op.name, 0) for t in op.inputs), default=0)
        depth[op.name] = before + (1 if op.type in _PRODUCT_OPS else 0)
    return max(depth.values(), default=0)


def measure_layer(
    kind: str, length: int, d: int, kernel_size: int = 3, num_heads: int = 1
) -> dict[str, float]:
    """Parameters, forward FLOPs, critical path and graph size of a built `reference_layer`.

    Args:
        kind, d, kernel_size, num_heads: as in `complexity.reference_layer`.
        length: sequence length `T`.

    Returns:
        A dict with `parameters` (`count_params()`), `flops`, `critical_path`, `sequential_steps`
        (the critical path at `T` over that at 1) and `graph_ops` (ops in the traced graph).

    Example:
    >>> measure_layer("rnn", length=6, d=4)["sequential_steps"]
    6
    >>> m = measure_layer("self_attention", length=6, d=4)
    >>> m["critical_path"], m["sequential_steps"]
    (4, 1)
    """
    check_positive_int("length", length)
    options = {"unroll": True} if kind in _RECURRENT_LAYERS else {}
    measured: dict[str, float] = {}
    for t in (1, length):
        with warnings.catch_warnings():  # Keras warns about a softmax over one key at T = 1
            warnings.simplefilter("ignore", UserWarning)
            layer = reference_layer(kind, d, kernel_size, num_heads, **options)
            apply_layer(layer, np.zeros((1, t, d), "float32"))
            graph = trace_graph(lambda x, layer=layer: apply_layer(layer, x), (1, t, d))
        measured[t] = critical_path(graph)
    ratio = measured[length] / measured[1]
    return {
        "parameters": int(layer.count_params()),
        "flops": count_flops(graph),
        "critical_path": measured[length],
        "sequential_steps": int(ratio) if float(ratio).is_integer() else ratio,
        "graph_ops": len(graph.get_operations()),
    }


class _CountingCell(keras.layers.Layer):
    """Wraps a recurrent cell and adds 1 to a counter variable on every step."""

    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        self.cell = cell
        self.state_size = cell.state_size
        self.output_size = cell.output_size

    def build(self, input_shape):
        self.cell.build(input_shape)
        self.steps = self.add_weight(
            shape=(), dtype="int32", initializer="zeros", trainable=False, name="steps"
        )

    def call(self, inputs, states, training=False):
        self.steps.assign_add(1)
        return self.cell(inputs, states, training=training)


def count_recurrent_steps(
    length: int, d: int = 8, cell: str = "lstm", *, compiled: bool = True
) -> int:
    """Steps a Keras recurrent layer (its `tf.while_loop`) executes on one sequence.

    Args:
        length: sequence length `T`.
        d: units.
        cell: `"rnn"`, `"lstm"` or `"gru"`.
        compiled: run inside `tf.function` (the graph's loop) rather than eagerly.

    Returns:
        How many loop iterations ran the cell: `T`, one after the other.

    Example:
    >>> count_recurrent_steps(7, d=4)
    7
    """
    check_positive_int("length", length)
    check_positive_int("d", d)
    if cell not in _RECURRENT_LAYERS:
        raise UserInputError(f"cell={cell!r} must be one of {tuple(_RECURRENT_LAYERS)}")
    counting = _CountingCell(getattr(keras.layers, _RECURRENT_LAYERS[cell] + "Cell")(d))
    layer = keras.layers.RNN(counting, return_sequences=True)
    x = tf.zeros((1, length, d))
    layer(x)  # builds; runs once
    counting.steps.assign(0)
    (tf.function(layer) if compiled else layer)(x)
    # Minus the call Keras makes before the loop for the output's shape ("output_time_zero").
    return int(counting.steps.numpy()) - 1


def measure_operations(
    lengths: list[int],
    d: int,
    kinds: tuple[str, ...] = ("self_attention", "rnn", "lstm", "convolution"),
    kernel_size: int = 3,
    num_heads: int = 1,
) -> dict[str, dict[str, list[int]]]:
    """`measure_layer` for every kind at every length.

    Args:
        lengths: sequence lengths `T`.
        d, kinds, kernel_size, num_heads: as in `measure_layer` (`kinds`: several `kind`).

    Returns:
        `{kind: {key: [one value per length]}}` with the keys of `measure_layer`.

    Example:
    >>> m = measure_operations([4, 8], d=4, kinds=("convolution",))
    >>> m["convolution"]["flops"], m["convolution"]["sequential_steps"]
    ([384, 768], [1, 1])
    """
    results: dict[str, dict[str, list[int]]] = {}
    for kind in kinds:
        rows = [measure_layer(kind, t, d, kernel_size, num_heads) for t in lengths]
        results[kind] = {key: [row[key] for row in rows] for key in rows[0]}
    return results


def growth_exponent(lengths: list[int], values: list[float]) -> float:
    """Slope of `log(value)` against `log(T)`: ~1 for linear growth, ~2 for quadratic.

    Example:
    >>> round(growth_exponent([10, 20, 40], [100, 400, 1600]), 3)
    2.0
    """
    x, y = (np.log(np.asarray(v, dtype="float64")) for v in (lengths, values))
    if len(x) < 2:
        raise UserInputError(f"lengths={lengths} needs at least two lengths to fit a slope")
    return float(np.polyfit(x, y, 1)[0])
