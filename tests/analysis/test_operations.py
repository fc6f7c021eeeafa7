"""FLOPs and sequential steps counted on traced graphs move as Table 1 says."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.analysis import (
    count_flops,
    count_recurrent_steps,
    critical_path,
    growth_exponent,
    layer_flops,
    layer_parameters,
    measure_layer,
    measure_operations,
    trace_graph,
)


def test_flop_counter_on_known_products():
    assert (
        count_flops(trace_graph(lambda x: tf.matmul(x, tf.ones((3, 7))), (5, 3))) == 2 * 5 * 7 * 3
    )
    batched = trace_graph(lambda x: tf.matmul(x, x, transpose_b=True), (2, 4, 3))
    assert count_flops(batched) == 2 * (2 * 4 * 4) * 3
    kernel = tf.ones((3, 4, 6))  # width 3, 4 -> 6 channels
    conv = trace_graph(lambda x: tf.nn.conv1d(x, kernel, 1, "SAME"), (1, 10, 4))
    assert count_flops(conv) == 2 * (10 * 6) * 3 * 4
    assert count_flops(trace_graph(lambda x: tf.nn.relu(x) + 1.0, (4, 4))) == 0


def test_critical_path_counts_products_in_sequence_not_in_parallel():
    def parallel(x):
        return tf.matmul(x, x) + tf.matmul(x, x) + tf.matmul(x, x)

    def chain(x):
        for _ in range(3):
            x = tf.matmul(x, x)
        return x

    assert critical_path(trace_graph(parallel, (2, 2))) == 1
    assert critical_path(trace_graph(chain, (2, 2))) == 3


@pytest.mark.parametrize("kind", ["self_attention", "rnn", "lstm", "gru", "convolution"])
def test_measured_equals_formulas(kind):
    measured = measure_layer(kind, length=6, d=8, kernel_size=3, num_heads=2)
    assert measured["flops"] == layer_flops(kind, 6, 8, 3)
    assert measured["parameters"] == layer_parameters(kind, 8, 3)


def test_attention_flops_grow_quadratically_rnn_linearly():
    lengths = [16, 32, 64]
    m = measure_operations(lengths, d=4, kinds=("self_attention", "rnn", "convolution"))
    assert growth_exponent(lengths, m["self_attention"]["flops"]) > 1.7
    assert growth_exponent(lengths, m["rnn"]["flops"]) == pytest.approx(1.0)
    assert growth_exponent(lengths, m["convolution"]["flops"]) == pytest.approx(1.0)
    # FLOPs per position: constant for the RNN, growing with T for attention.
    per_position = {k: np.array(v["flops"]) / np.array(lengths) for k, v in m.items()}
    assert len(set(per_position["rnn"].tolist())) == 1
    assert np.diff(per_position["self_attention"]).min() > 0


def test_rnn_sequential_steps_equal_t_attention_and_convolution_stay_one():
    lengths = [1, 3, 7]
    m = measure_operations(lengths, d=4, kinds=("self_attention", "lstm", "convolution"))
    assert m["lstm"]["sequential_steps"] == lengths
    assert m["lstm"]["critical_path"] == lengths
    assert m["self_attention"]["sequential_steps"] == [1, 1, 1]
    assert m["self_attention"]["critical_path"] == [4, 4, 4]  # Q -> scores -> values -> out
    assert m["convolution"]["sequential_steps"] == [1, 1, 1]
    ops = m["lstm"]["graph_ops"]  # unrolled: one copy of the step per position
    assert ops[2] - ops[1] == 2 * (ops[1] - ops[0]) > 0  # linear in T (7 - 3 = 2 * (3 - 1))
    assert len(set(m["self_attention"]["graph_ops"])) == 1  # one graph for any T


@pytest.mark.parametrize("cell", ["rnn", "lstm", "gru"])
@pytest.mark.parametrize("compiled", [True, False])
def test_while_loop_runs_t_steps(cell, compiled):
    assert [count_recurrent_steps(t, d=4, cell=cell, compiled=compiled) for t in (2, 9)] == [2, 9]


def test_errors():
    with pytest.raises(ValueError, match="cell='cnn'"):
        count_recurrent_steps(3, cell="cnn")
    with pytest.raises(ValueError, match="at least two lengths"):
        growth_exponent([4], [10])
    with pytest.raises(ValueError, match="static input_shape"):
        from keras_transformer.analysis import op_flops

        graph = (
            tf.function(lambda x: tf.matmul(x, x))
            .get_concrete_function(tf.TensorSpec((None, None), tf.float32))
            .graph
        )
        [op_flops(op) for op in graph.get_operations()]
