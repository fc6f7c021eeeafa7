"""Measured operations and sequential steps, read from TensorFlow's traced graph.

Method. The layer's forward pass on one `(1, T, d)` input is traced with
`tf.function(...).get_concrete_function(...)`; every shape in that graph is
then static. The graph is walked op by op:

- **FLOPs**: every `MatMul`, `BatchMatMulV2` (Keras lowers `einsum` to it) and
  `Conv2D` (TensorFlow runs `Conv1D` as a 2-D convolution) contributes
  `2 * (output elements) * (contracted size)`, i.e. 2 FLOPs per multiply-add,
  read from the op's input and output shapes. Other ops (softmax,
  activations, bias adds, norms) are O(T d) and not counted, like in
  `complexity.layer_flops`.
- **Sequential steps**: the *critical path* of the graph, the largest number
  of matrix products / convolutions on one chain of data dependencies, divided
  by its value for a one-position sequence. Ops on different chains can run
  at the same time; ops on one chain cannot. A
  recurrent layer is traced with `unroll=True` for this, so its `T` steps
  appear as `T` copies of the step in the graph (a `tf.while_loop` would hide
  them in one loop op).
- **Loop iterations** (`count_recurrent_steps`): the production recurrent
  layer (a `tf.while_loop`, not unrolled) runs with a cell that increments a
  counter variable on every call; the counter after one forward pass is the
  number of sequential steps actually executed.

`tf.compat.v1.profiler` gives the same FLOPs for `MatMul` and `Conv2D`
but does not look inside loops, which is why this module counts itself.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer._validation import check_positive_int
from keras_transformer.analysis.complexity import apply_layer, reference_layer

_PRODUCT_OPS = ("MatMul", "BatchMatMulV2", "BatchMatMul", "BatchMatMulV3", "Conv2D")


def trace_graph(fn: Callable[[tf.Tensor], Any], input_shape: tuple[int, ...]) -> tf.Graph:
    """The graph of `fn` traced on a float32 input of static `input_shape`.

    Example:

    >>> graph = trace_graph(lambda x: tf.matmul(x, x), (3, 3))
    >>> [op.type for op in graph.get_operations()][-2:]
    ['MatMul', 'Identity']
    """
    spec = tf.TensorSpec(input_shape, tf.float32)
    return tf.function(fn).get_concrete_function(spec).graph


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
        height, width, in_channels, _ = second  # filter (h, w, in, out)
        return 2 * elements * height * width * in_channels
    if op.type == "MatMul":
        transposed = op.get_attr("transpose_a")
    else:
        transposed = op.get_attr("adj_x")
    contracted = first[-2] if transposed else first[-1]
    return 2 * elements * contracted


def count_flops(graph: tf.Graph) -> int:
    """Total FLOPs of the matrix products and convolutions in `graph` (see `op_flops`).

    Example:

    >>> count_flops(trace_graph(lambda x: tf.matmul(x, x), (4, 4)))
    128
    """
    return sum(op_flops(op) for op in graph.get_operations())


def critical_path(graph: tf.Graph) -> int:
    """The most matrix products / convolutions on one chain of data dependencies.

    This is the number of product steps that must run one after another
    however many processors there are: the measured "sequential steps".

    Example:

    >>> def chain(x):  # x @ x, then the result @ x: two steps in sequence
    ...     return tf.matmul(tf.matmul(x, x), x)
    >>> critical_path(trace_graph(chain, (2, 2)))
    2
    """
    depth: dict[str, int] = {}
    for op in graph.get_operations():  # creation order is a topological order
        before = max((depth.get(t.op.name, 0) for t in op.inputs), default=0)
        depth[op.name] = before + (1 if op.type in _PRODUCT_OPS else 0)
    return max(depth.values(), default=0)


def _built_layer(kind: str, d: int, kernel_size: int, num_heads: int, length: int, **kwargs):
    layer = reference_layer(kind, d, kernel_size, num_heads, **kwargs)
    apply_layer(layer, np.zeros((1, length, d), "float32"))
    return layer


def measure_layer(
    kind: str, length: int, d: int, kernel_size: int = 3, num_heads: int = 1
) -> dict[str, float]:
    """Parameters, forward FLOPs, critical path and graph size of a built `reference_layer`.

    The recurrent layers are traced unrolled (see the module docstring).
    `sequential_steps` is the critical path at length `T` divided by the
    critical path at length 1: how many times longer the chain of dependent
    products gets when the layer reads `T` positions instead of one. It is
    `T` for a recurrent layer and 1 for attention (whose chain, Q projection
    -> scores -> weighted values -> output projection, is 4 products for any
    `T`) and for a convolution.

    Args:
        kind: one of `complexity.LAYER_KINDS`.
        length: sequence length `T`.
        d: model width.
        kernel_size: convolution width.
        num_heads: attention heads.

    Returns:
        A dict with `parameters` (`count_params()`), `flops`, `critical_path`,
        `sequential_steps` and `graph_ops` (ops in the traced graph).

    Example:

    >>> measure_layer("rnn", length=6, d=4)["sequential_steps"]
    6
    >>> m = measure_layer("self_attention", length=6, d=4)
    >>> m["critical_path"], m["sequential_steps"]
    (4, 1)
    """
    check_positive_int("length", length)
    recurrent = kind in ("rnn", "lstm", "gru")
    options = {"unroll": True} if recurrent else {}
    measured: dict[str, float] = {}
    for t in (1, length):
        with warnings.catch_warnings():  # Keras warns about a softmax over one key at T = 1
            warnings.simplefilter("ignore", UserWarning)
            layer = _built_layer(kind, d, kernel_size, num_heads, t, **options)
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
        How many loop iterations ran the cell: `T`, one after the other. Keras
        also calls the step once before the loop, on the first input, only to
        learn the output's shape and dtype, and discards the result
        (`keras/src/backend/tensorflow/rnn.py`, "output_time_zero"); the counter
        sees `T + 1` calls and that one is subtracted.

    Example:

    >>> count_recurrent_steps(7, d=4)
    7
    """
    check_positive_int("length", length)
    check_positive_int("d", d)
    cells = {
        "rnn": keras.layers.SimpleRNNCell,
        "lstm": keras.layers.LSTMCell,
        "gru": keras.layers.GRUCell,
    }
    if cell not in cells:
        raise ValueError(f"cell={cell!r} must be one of {tuple(cells)}")
    counting = _CountingCell(cells[cell](d))
    layer = keras.layers.RNN(counting, return_sequences=True)
    x = tf.zeros((1, length, d))
    layer(x)  # builds; runs once
    counting.steps.assign(0)
    if compiled:
        tf.function(layer)(x)
    else:
        layer(x)
    return int(counting.steps.numpy()) - 1  # minus Keras' discarded shape-inference step


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
        d: model width.
        kinds: layer kinds.
        kernel_size: convolution width.
        num_heads: attention heads.

    Returns:
        `{kind: {"parameters": [...], "flops": [...], "critical_path": [...],
        "sequential_steps": [...], "graph_ops": [...]}}`, one entry per length.

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
    x = np.log(np.asarray(lengths, dtype="float64"))
    y = np.log(np.asarray(values, dtype="float64"))
    if len(x) < 2:
        raise ValueError(f"lengths={lengths} needs at least two lengths to fit a slope")
    return float(np.polyfit(x, y, 1)[0])
