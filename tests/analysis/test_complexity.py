"""Table 1 formulas against built Keras layers."""

import numpy as np
import pytest

from keras_transformer.analysis import (
    LAYER_KINDS,
    apply_layer,
    complexity_table,
    layer_flops,
    layer_parameters,
    maximum_path_length,
    operations_crossover,
    reference_layer,
    sequential_steps,
    table_operations,
)


@pytest.mark.parametrize("kind", LAYER_KINDS)
@pytest.mark.parametrize(("d", "length"), [(8, 5), (12, 3)])
def test_parameter_formula_equals_built_layer_at_any_length(kind, d, length):
    layer = reference_layer(kind, d, kernel_size=5, num_heads=2 if d % 2 == 0 else 1)
    out = apply_layer(layer, np.zeros((1, length, d), "float32"))
    assert tuple(out.shape) == (1, length, d)
    assert layer.count_params() == layer_parameters(kind, d, kernel_size=5)


@pytest.mark.parametrize("kind", LAYER_KINDS)
def test_parameters_do_not_grow_with_length(kind):
    """A layer built on short sequences has its weights already: a sequence 16x longer adds
    none, and a layer built on the long one has as many (the same matrices serve every T)."""
    d, short, long = 8, 4, 64
    layer = reference_layer(kind, d, num_heads=2)
    apply_layer(layer, np.zeros((1, short, d), "float32"))
    count = layer.count_params()
    apply_layer(layer, np.zeros((1, long, d), "float32"))
    assert layer.count_params() == count
    fresh = reference_layer(kind, d, num_heads=2)
    apply_layer(fresh, np.zeros((1, long, d), "float32"))
    assert fresh.count_params() == count == layer_parameters(kind, d)


def test_flops_grow_linearly_for_recurrence_and_faster_for_attention():
    for kind in LAYER_KINDS:
        assert layer_flops(kind, 32, 8) > layer_flops(kind, 16, 8)
    attention = [layer_flops("self_attention", t, 16) for t in (64, 128, 256)]
    rnn = [layer_flops("rnn", t, 16) for t in (64, 128, 256)]
    assert rnn[1] == 2 * rnn[0] and rnn[2] == 2 * rnn[1]  # linear in T
    assert attention[2] / attention[1] > attention[1] / attention[0] > 2  # superlinear


def test_table_terms_cross_at_t_equals_d():
    d = 64
    assert operations_crossover(d) == d
    below, above = d // 2, 2 * d
    assert table_operations("self_attention", below, d) < table_operations("rnn", below, d)
    assert table_operations("self_attention", above, d) > table_operations("rnn", above, d)
    # With the projections, attention equals an LSTM at T = 2d and is never below a simple RNN.
    t = int(operations_crossover(d, "lstm", exact=True))
    assert layer_flops("self_attention", t, d) == layer_flops("lstm", t, d)
    assert operations_crossover(d, "rnn", exact=True) == 0
    assert all(layer_flops("self_attention", t, d) > layer_flops("rnn", t, d) for t in (1, 8, 512))


def test_sequential_steps_and_path_length():
    assert [sequential_steps(k, 20) for k in ("self_attention", "rnn", "convolution")] == [1, 20, 1]
    assert maximum_path_length("self_attention", 100) == 1
    assert maximum_path_length("lstm", 100) == 99
    assert maximum_path_length("convolution", 100, kernel_size=3) == 50
    assert maximum_path_length("convolution", 100, kernel_size=12) == 9
    assert maximum_path_length("rnn", 1) == 0


def test_complexity_table_rows():
    rows = complexity_table(10, 16, kernel_size=3)
    assert [r["layer"] for r in rows] == list(LAYER_KINDS)
    attention = rows[0]
    assert attention["operations_order"] == "O(T^2 d)" and attention["path_order"] == "O(1)"
    assert attention["flops"] == layer_flops("self_attention", 10, 16)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: layer_parameters("transformer", 8), "kind='transformer'"),
        (lambda: layer_flops("rnn", 0, 8), "length=0"),
        (lambda: maximum_path_length("convolution", 9, kernel_size=1), "kernel_size=1"),
        (lambda: operations_crossover(8, "cnn"), "rnn='cnn'"),
        (lambda: reference_layer("self_attention", 10, num_heads=3), "num_heads=3"),
    ],
)
def test_errors_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()
