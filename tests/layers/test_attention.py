"""scaled_dot_product_attention and MultiHeadAttention against NumPy and Keras."""

import warnings

import keras
import numpy as np
import pytest

from keras_transformer.layers import MultiHeadAttention, scaled_dot_product_attention
from tests.helpers import assert_config_round_trip, compiled

RNG = np.random.default_rng(0)


def numpy_attention(q, k, v, mask=None):
    logits = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        logits = np.where(mask, logits, -np.inf)
    logits = logits - logits.max(-1, keepdims=True)
    w = np.exp(logits)
    w = w / w.sum(-1, keepdims=True)
    return w @ v, w


# keras.layers.MultiHeadAttention with value_dim != key_dim fails on the JAX backend (Keras
# 3.15.1) whenever it takes its dot-product path (no dropout, no scores): it calls
# keras.ops.dot_product_attention, i.e. jax.nn.dot_product_attention, which needs one head size
# for query, key and value ("value shape should be [2, 4, 3, 4]: but got (2, 4, 3, 5)"), and its
# fallback reshapes the same way. Its scores path works on every backend, so the reference is
# built and compared through that path (`return_attention_scores=True`).
def build_reference(ref, *inputs):
    ref(*inputs, return_attention_scores=True)


def pair(**kwargs):
    """A Keras MHA and ours with the Keras weights copied into ours."""
    ref = keras.layers.MultiHeadAttention(**kwargs)
    ours = MultiHeadAttention(**kwargs)
    return ref, ours


def copy_weights(ref, ours, q, v):
    ref(q, v)
    ours(q, v)
    ours.set_weights(ref.get_weights())


# ---------------------------------------------------------------- scaled_dot_product_attention


def test_sdpa_matches_numpy_and_weights_sum_to_one():
    q, k, v = (RNG.normal(size=(2, 3, n, 4)).astype("float32") for n in (5, 6, 6))
    out, w = scaled_dot_product_attention(q, k, v)
    ref_out, ref_w = numpy_attention(q, k, v)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    np.testing.assert_allclose(w, ref_w, atol=1e-6)
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, atol=1e-6)


def test_sdpa_masked_keys_get_zero_weight():
    q, k, v = (RNG.normal(size=(2, n, 4)).astype("float32") for n in (3, 5, 5))
    mask = RNG.random((2, 3, 5)) > 0.4
    mask[..., 0] = True  # at least one key per query
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    w = np.asarray(w)
    assert np.all(w[~mask] == 0.0)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    ref_out, _ = numpy_attention(q, k, v, mask)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)


def test_sdpa_fully_masked_query_gives_zeros_not_nan():
    q, k, v = (np.ones((1, n, 2), "float32") for n in (2, 3, 3))
    mask = np.array([[[True, False, True], [False, False, False]]])
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    assert np.all(np.asarray(w)[0, 1] == 0.0) and np.all(np.asarray(out)[0, 1] == 0.0)


def test_sdpa_float16_softmax_runs_in_float32():
    q = RNG.normal(size=(1, 4, 8)).astype("float16") * 30  # large logits overflow fp16 exp
    out, w = scaled_dot_product_attention(q, q, q, mask=np.tril(np.ones((4, 4), bool)))
    dtype = keras.backend.standardize_dtype
    assert dtype(w.dtype) == "float32" and dtype(out.dtype) == "float16"
    assert np.all(np.isfinite(np.asarray(out)))
    np.testing.assert_allclose(np.asarray(w).sum(-1), 1.0, atol=1e-5)


# ---------------------------------------------------------------- MultiHeadAttention vs Keras


def test_weight_layout_matches_keras():
    ref, ours = pair(num_heads=3, key_dim=4, value_dim=5)
    q = RNG.normal(size=(2, 4, 6)).astype("float32")
    build_reference(ref, q, q)
    ours(q, q)
    assert [w.shape for w in ours.weights] == [w.shape for w in ref.weights]
    assert [w.path.split("/", 1)[1] for w in ours.weights] == [
        w.path.split("/", 1)[1] for w in ref.weights
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(num_heads=2, key_dim=4),
        dict(num_heads=3, key_dim=2, value_dim=5, output_shape=7),
        dict(num_heads=1, key_dim=8, use_bias=False),
    ],
)
def test_cross_attention_equals_keras(kwargs):
    q = RNG.normal(size=(2, 4, 6)).astype("float32")
    v = RNG.normal(size=(2, 7, 9)).astype("float32")
    k = RNG.normal(size=(2, 7, 3)).astype("float32")
    ref, ours = pair(**kwargs)
    build_reference(ref, q, v, k)
    ours(q, v, k)
    ours.set_weights(ref.get_weights())
    a, sa = ref(q, v, k, return_attention_scores=True)
    b, sb = ours(q, v, k, return_attention_scores=True)
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(sa, sb, atol=1e-5)


def test_self_causal_and_explicit_mask_equal_keras():
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    ref, ours = pair(num_heads=2, key_dim=4)
    copy_weights(ref, ours, x, x)
    # causal, with and without scores (Keras then takes its fused path)
    np.testing.assert_allclose(
        ref(x, x, use_causal_mask=True), ours(x, x, use_causal_mask=True), atol=1e-5
    )
    a, sa = ref(x, x, use_causal_mask=True, return_attention_scores=True)
    b, sb = ours(x, x, use_causal_mask=True, return_attention_scores=True)
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(sa, sb, atol=1e-5)
    # explicit attention mask, including a fully masked query row
    mask = RNG.random((2, 5, 5)) > 0.5
    mask[1, 2] = False
    a, sa = ref(x, x, attention_mask=mask, return_attention_scores=True)
    b, sb = ours(x, x, attention_mask=mask, return_attention_scores=True)
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(sa, sb, atol=1e-5)
    # explicit mask combined with the causal mask. Every query keeps key 0: on a
    # fully masked row Keras's fused path (taken without scores) averages all
    # values while its scores path, and ours always, return zeros.
    mask[..., 0] = True
    a = ref(x, x, attention_mask=mask, use_causal_mask=True)
    b = ours(x, x, attention_mask=mask, use_causal_mask=True)
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_propagated_padding_masks_equal_keras():
    """Keras masks from mask_zero embeddings are consumed like Keras's layer does."""
    q_ids = np.array([[3, 4, 5, 0], [6, 0, 0, 0]])
    v_ids = np.array([[1, 2, 0, 0, 0], [7, 8, 9, 3, 0]])
    emb = keras.layers.Embedding(10, 6, mask_zero=True)
    ref, ours = pair(num_heads=2, key_dim=3)
    copy_weights(ref, ours, emb(q_ids), emb(v_ids))
    for causal in (False, True):
        q, v = emb(q_ids), emb(v_ids)  # fresh tensors: Keras clears the masks it reads
        a, sa = ref(q, v, use_causal_mask=causal, return_attention_scores=True)
        q, v = emb(q_ids), emb(v_ids)
        b, sb = ours(q, v, use_causal_mask=causal, return_attention_scores=True)
        np.testing.assert_allclose(a, b, atol=1e-5)
        np.testing.assert_allclose(sa, sb, atol=1e-5)
        # padded keys of `value` get weight 0
        assert np.all(np.asarray(sb)[1, :, :, 4] == 0.0)
        assert np.all(np.asarray(sb)[0, :, :, 2:] == 0.0)


def test_equal_inside_functional_models_compiled_and_predict():
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, 8, mask_zero=True)(ids)
    ref_model = keras.Model(ids, keras.layers.MultiHeadAttention(2, 4, name="mha")(x, x))
    ours_model = keras.Model(ids, MultiHeadAttention(2, 4, name="mha")(x, x))
    ours_model.set_weights(ref_model.get_weights())
    batch = np.array([[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]])
    real = batch != 0
    # Compared on real query positions: on padded (fully masked) query rows Keras's
    # fused path, taken here, averages all values; its scores path and ours give 0.
    for run_ref, run_ours in [
        (ref_model, ours_model),
        (compiled(ref_model), compiled(ours_model)),
        (lambda b: ref_model.predict(b, verbose=0), lambda b: ours_model.predict(b, verbose=0)),
    ]:
        np.testing.assert_allclose(
            np.asarray(run_ref(batch))[real], np.asarray(run_ours(batch))[real], atol=1e-5
        )


def test_dropout_only_in_training():
    x = RNG.normal(size=(2, 6, 8)).astype("float32")
    mha = MultiHeadAttention(2, 4, dropout=0.5, seed=1)
    eval_a, eval_b = mha(x, x), mha(x, x, training=False)
    np.testing.assert_allclose(eval_a, eval_b)
    train = mha(x, x, training=True)
    assert np.abs(np.asarray(train) - np.asarray(eval_a)).max() > 1e-3


def test_incremental_decoding_with_cache_equals_full_causal_pass():
    batch, length, heads, dim = 2, 6, 2, 4
    x = RNG.normal(size=(batch, length, 8)).astype("float32")
    mha = MultiHeadAttention(heads, dim)
    full = np.asarray(mha(x, x, use_causal_mask=True))
    cache = np.zeros((batch, 2, length, heads, dim), "float32")
    steps = []
    for t in range(length):
        step = x[:, t : t + 1]
        out, cache = mha(step, step, use_causal_mask=True, cache=cache, cache_update_index=t)
        steps.append(np.asarray(out))
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-5)


@pytest.mark.parametrize(("written", "index"), [(1, 0), (1, 5), (3, 2)])
def test_write_positions_is_slice_update(written, index):
    """The cache write: NumPy's slice assignment, for one position or several, at the ends."""
    from keras_transformer.layers.attention import write_positions

    cache = RNG.normal(size=(3, 2, 6, 2, 4)).astype("float32")
    update = RNG.normal(size=(3, 2, written, 2, 4)).astype("float32")
    expected = cache.copy()
    expected[:, :, index : index + written] = update
    got = write_positions(keras.ops.convert_to_tensor(cache), update, index)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(got), expected)


@pytest.mark.requires_tensorflow("checks the TensorFlow graph's ops")
def test_a_cache_of_unknown_length_is_written_without_xla_and_alike():
    """Traced with the cache's length unknown (the search without XLA), the write is a plain
    TensorFlow scatter: `XlaDynamicUpdateSlice` compiled itself anew for every batch size."""
    import tensorflow as tf

    from keras_transformer.layers.attention import write_positions

    specs = [
        tf.TensorSpec([None, 2, None, 2, 4]),
        tf.TensorSpec([None, 2, 1, 2, 4]),
        tf.TensorSpec([], tf.int32),
    ]
    write = tf.function(write_positions, input_signature=specs, autograph=False)
    kinds = {op.type for op in write.get_concrete_function().graph.get_operations()}
    assert not any(kind.startswith("Xla") for kind in kinds), kinds
    cache = RNG.normal(size=(2, 2, 5, 2, 4)).astype("float32")
    update = RNG.normal(size=(2, 2, 1, 2, 4)).astype("float32")
    expected = cache.copy()
    expected[:, :, 4:5] = update
    np.testing.assert_array_equal(write(cache, update, tf.constant(4)).numpy(), expected)


def test_read_only_cache_equals_cross_attention():
    q = RNG.normal(size=(2, 3, 8)).astype("float32")
    ctx = RNG.normal(size=(2, 5, 8)).astype("float32")
    mha = MultiHeadAttention(2, 4)
    full = mha(q, ctx)
    cache = np.stack([mha.key_dense(ctx), mha.value_dense(ctx)], axis=1)
    out, same_cache = mha(q, ctx, cache=cache)
    np.testing.assert_allclose(out, full, atol=1e-5)
    np.testing.assert_array_equal(same_cache, cache)


def test_config_round_trip_and_output_mask():
    mha = MultiHeadAttention(3, 5, value_dim=2, dropout=0.2, use_bias=False, output_shape=4)
    assert_config_round_trip(mha)
    emb = keras.layers.Embedding(10, 6, mask_zero=True)
    q = emb(np.array([[1, 2, 0]]))
    out = MultiHeadAttention(2, 3)(q, q)
    np.testing.assert_array_equal(out._keras_mask, [[True, True, False]])


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        (dict(num_heads=0, key_dim=4), ValueError, "num_heads"),
        (dict(num_heads=2, key_dim=-1), ValueError, "key_dim"),
        (dict(num_heads=2, key_dim=4, dropout=1.0), ValueError, "dropout"),
        (dict(num_heads=2.5, key_dim=4), TypeError, "num_heads"),  # a wrong type: TypeError
    ],
)
def test_invalid_arguments_are_named(kwargs, error, message):
    with pytest.raises(error, match=message):
        MultiHeadAttention(**kwargs)


def test_a_wrong_type_is_also_the_value_error_keras_raises():
    with pytest.raises(ValueError, match="argument `key_dim`"):
        MultiHeadAttention(num_heads=2, key_dim=1.5)


# ---------------------------------------------------------------- Keras conventions (issue 29)


def test_gate_and_tuple_output_shape_match_keras():
    q, v = (
        RNG.normal(size=(2, 3, 6)).astype("float32"),
        RNG.normal(size=(2, 4, 6)).astype("float32"),
    )
    for kwargs in (dict(use_gate=True), dict(output_shape=(2, 3))):
        ref, ours = pair(num_heads=2, key_dim=3, **kwargs)
        copy_weights(ref, ours, q, v)
        np.testing.assert_allclose(ours(q, v), ref(q, v), atol=1e-5)
    assert tuple(ours(q, v).shape) == (2, 3, 2, 3) == ours.compute_output_shape(q.shape, v.shape)


def test_broadcastable_attention_masks_equal_the_full_mask():
    x = RNG.normal(size=(2, 5, 8)).astype("float32")
    mha = MultiHeadAttention(2, 4)
    keys = np.array([[True] * 5, [True] * 3 + [False] * 2])
    full = np.repeat(keys[:, None, :], 5, axis=1)  # (batch, q_len, kv_len)
    expected = np.asarray(mha(x, x, attention_mask=full))
    for mask in (keys[:, None, :], np.repeat(full[:, None], 2, axis=1)):  # (b, 1, S), per head
        np.testing.assert_allclose(mha(x, x, attention_mask=mask), expected, atol=1e-6)
    causal = np.tril(np.ones((5, 5), bool))  # (T, S)
    np.testing.assert_allclose(
        mha(x, x, attention_mask=causal), mha(x, x, use_causal_mask=True), atol=1e-6
    )


def test_implicit_masks_match_keras_without_warnings():
    ref, ours = pair(num_heads=2, key_dim=4)
    emb = keras.layers.Embedding(10, 8, mask_zero=True)
    q_ids, v_ids = np.array([[1, 2, 0], [3, 0, 0]]), np.array([[4, 5, 6, 0], [7, 8, 0, 0]])
    copy_weights(ref, ours, emb(q_ids), emb(v_ids))
    expected = np.asarray(ref(emb(q_ids), emb(v_ids)))  # Keras's call deletes the input masks
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "... was passed an input with a mask attached ..."
        out = ours(emb(q_ids), emb(v_ids))
    real = q_ids != 0
    np.testing.assert_allclose(np.asarray(out)[real], expected[real], atol=1e-5)
    np.testing.assert_array_equal(out._keras_mask, real)


def test_constraints_regularizers_and_initializers_reach_the_projections():
    mha = MultiHeadAttention(
        2,
        4,
        kernel_constraint="non_neg",
        bias_constraint="non_neg",
        kernel_regularizer="l2",
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
        use_gate=True,
    )
    mha.build((1, 2, 8), (1, 2, 8))
    projections = [
        mha.query_dense,
        mha.key_dense,
        mha.gate_dense,
        mha.value_dense,
        mha.output_dense,
    ]
    for dense in projections:
        assert isinstance(dense.kernel.constraint, keras.constraints.NonNeg)
        assert isinstance(dense.bias.constraint, keras.constraints.NonNeg)
    assert len(mha.losses) == 5  # one L2 penalty per kernel
    assert not np.allclose(mha.query_dense.kernel, mha.key_dense.kernel)  # fresh initializers


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_heads=0, key_dim=4), "argument `num_heads`.*num_heads=0"),
        (dict(num_heads=2, key_dim=4, value_dim=1.5), "argument `value_dim`"),
        (dict(num_heads=2, key_dim=4, output_shape=8.0), "Invalid `output_shape`: 8.0"),
    ],
)
def test_errors_use_keras_wording(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**kwargs)
    mha = MultiHeadAttention(2, 4)
    with pytest.raises(ValueError, match="except the last one, must be equal"):
        mha.compute_output_shape((2, 4, 8), (2, 3, 8), (2, 5, 8))


# ---------------------------------------------------------------- the fused path (issue 36)


def test_fused_kernel_equals_the_from_scratch_path():
    q, k, v = (RNG.normal(size=(2, 3, n, 4)).astype("float32") for n in (5, 6, 6))
    mask = RNG.random((2, 1, 5, 6)) > 0.3
    mask[1, 0, 2] = False  # a query with no key: 0 on both paths
    scratch, weights = scaled_dot_product_attention(q, k, v, mask, fused=True)
    fast, none = scaled_dot_product_attention(q, k, v, mask, return_weights=False, fused=True)
    assert none is None
    np.testing.assert_allclose(fast, scratch, atol=1e-5)
    assert np.all(np.asarray(fast)[1, :, 2] == 0.0)


@pytest.mark.parametrize("flash_attention, fused_calls", [(True, [1]), (False, []), (None, [])])
def test_fused_kernel_is_used_only_when_the_weights_are_not_requested(
    monkeypatch, flash_attention, fused_calls
):
    # flash_attention (Keras's argument): True fuses where allowed, False never, None where it
    # pays (a GPU with JAX or PyTorch; not this CPU).
    calls = []
    original = keras.ops.dot_product_attention
    monkeypatch.setattr(
        keras.ops, "dot_product_attention", lambda *a, **k: calls.append(1) or original(*a, **k)
    )
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    mha = MultiHeadAttention(num_heads=2, key_dim=4, flash_attention=flash_attention)
    with_scores, _ = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    assert calls == []
    np.testing.assert_allclose(mha(x, x, use_causal_mask=True), with_scores, atol=1e-5)
    assert calls == fused_calls
    copy = MultiHeadAttention.from_config(mha.get_config())  # saved with the layer
    assert copy.flash_attention is flash_attention


def test_the_cpu_default_runs_the_code_the_student_reads(monkeypatch):
    monkeypatch.setattr(keras.ops, "dot_product_attention", None)  # would fail if called
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    assert tuple(MultiHeadAttention(num_heads=2, key_dim=4)(x, x).shape) == (2, 4, 8)


def test_attention_dropout_is_an_argument_of_the_function():
    q = RNG.normal(size=(2, 2, 6, 4)).astype("float32")
    out, w = scaled_dot_product_attention(q, q, q)
    same, _ = scaled_dot_product_attention(q, q, q, dropout_rate=0.5, training=False)
    np.testing.assert_array_equal(same, out)
    dropped, w_train = scaled_dot_product_attention(
        q, q, q, dropout_rate=0.5, training=True, seed=keras.random.SeedGenerator(1)
    )
    assert np.abs(np.asarray(dropped) - np.asarray(out)).max() > 1e-3
    np.testing.assert_allclose(w_train, w, atol=1e-6)  # weights are returned before dropout


def test_fused_setting_keeps_the_from_scratch_path_for_a_wider_value_head():
    """Fused kernels need one head size for q, k and v: value_dim=5 falls back, same result."""
    q, v = (RNG.normal(size=(2, n, 6)).astype("float32") for n in (3, 4))
    ref = keras.layers.MultiHeadAttention(num_heads=3, key_dim=4, value_dim=5)
    ours = MultiHeadAttention(num_heads=3, key_dim=4, value_dim=5, flash_attention=True)
    ref(q, v, return_attention_scores=True)  # Keras's own fused path refuses this shape
    ours(q, v)
    ours.set_weights(ref.get_weights())
    expected, _ = ref(q, v, return_attention_scores=True)
    np.testing.assert_allclose(ours(q, v), expected, atol=1e-5)


def test_flash_attention_takes_only_true_false_or_none():
    with pytest.raises(ValueError, match="flash_attention='yes' is not supported"):
        MultiHeadAttention(num_heads=2, key_dim=4, flash_attention="yes")
