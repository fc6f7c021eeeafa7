"""The coursework checkers accept correct student code and name typical mistakes.

Each checker gets one correct implementation written here the way a student
would (NumPy functions, Keras layers without `build()`), and at least four
buggy ones, each of which must be rejected with the message that names its bug.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer import exercises

# --------------------------------------------------------------------------- attention


def make_attention(bug=None):
    def attention(query, key, value, mask=None):
        query, key, value = (np.asarray(t, "float64") for t in (query, key, value))
        d_k = query.shape[-1]
        scores = query @ np.swapaxes(key, -1, -2)
        if bug == "no_scale":
            pass
        elif bug == "divide_by_d":
            scores = scores / d_k
        else:
            scores = scores / np.sqrt(d_k)
        if mask is not None:
            keep = ~np.asarray(mask) if bug == "mask_inverted" else np.asarray(mask)
            if bug != "mask_after_softmax":
                scores = np.where(keep, scores, -1e9)
        axis = -2 if bug == "softmax_queries" else -1
        weights = np.exp(scores - scores.max(axis, keepdims=True))
        weights = weights / weights.sum(axis, keepdims=True)
        if bug == "mask_after_softmax" and mask is not None:
            weights = weights * np.asarray(mask)
        if bug == "transpose_3d":  # only right for 3-D inputs
            weights = weights.reshape(weights.shape)
            if query.ndim == 4:
                value = value.swapaxes(0, 1)
        return weights @ value, weights

    return attention


def keras_attention(query, key, value, mask=None):
    """A Keras-ops version (tensors out), as a student might write it."""
    scores = ops.matmul(query, ops.swapaxes(key, -1, -2)) / ops.sqrt(
        ops.cast(ops.shape(key)[-1], "float32")
    )
    if mask is not None:
        scores = ops.where(mask, scores, -1e9)
    weights = ops.softmax(scores, axis=-1)
    return ops.matmul(weights, value), weights


def test_attention_checker_accepts_correct_implementations():
    # a checker returns None or raises AssertionError: calling it is the assertion
    exercises.check_scaled_dot_product_attention(make_attention())
    exercises.check_scaled_dot_product_attention(keras_attention)


def test_the_correct_attention_is_correct_on_a_hand_computed_example():
    """The implementation the checker accepts gives softmax(q k^T / sqrt(d_k)) v, by hand."""
    query = np.array([[[2.0, 0.0]]], "float32")
    key = np.array([[[1.0, 0.0], [0.0, 1.0]]], "float32")
    value = np.array([[[10.0, 0.0], [0.0, 10.0]]], "float32")
    a, b = np.exp(2 / np.sqrt(2)), np.exp(0.0)  # scores 2 / sqrt(2) and 0
    expected_weights = np.array([[[a / (a + b), b / (a + b)]]])
    for attention in (make_attention(), keras_attention):
        output, weights = attention(query, key, value)
        np.testing.assert_allclose(np.asarray(weights), expected_weights, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(output), 10 * expected_weights, rtol=1e-5)
    masked = np.array([[[True, False]]])
    output, weights = make_attention()(query, key, value, masked)
    np.testing.assert_allclose(weights, [[[1.0, 0.0]]], atol=1e-12)


@pytest.mark.parametrize(
    "bug, message",
    [
        ("no_scale", "not scaled"),
        ("divide_by_d", "divided by d_k"),
        ("softmax_queries", "softmax over the wrong axis"),
        ("mask_inverted", "mask polarity inverted"),
        ("mask_after_softmax", "before the softmax"),
        ("transpose_3d", "4-D inputs"),
    ],
)
def test_attention_checker_names_the_mistake(bug, message):
    with pytest.raises(AssertionError, match=message) as info:
        exercises.check_scaled_dot_product_attention(make_attention(bug))
    assert "section 3.2" in str(info.value)


def test_checker_reports_unimplemented_exercise():
    def attention(query, key, value, mask=None):
        raise NotImplementedError("write the attention")

    with pytest.raises(AssertionError, match="not implemented yet"):
        exercises.check_scaled_dot_product_attention(attention)


# --------------------------------------------------------------------------- positional encoding


def make_positional_encoding(bug=None):
    def positional_encoding(length, depth):
        pos = np.arange(length)[:, None] + (1 if bug == "from_one" else 0)
        i = np.arange(depth // 2)[None, :]
        exponent = i / depth if bug == "exponent_i" else 2 * i / depth
        angles = pos / 10000**exponent  # (length, depth / 2)
        if bug == "concatenated":
            return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)
        table = np.zeros((length, depth))
        first, second = (np.cos, np.sin) if bug == "swapped" else (np.sin, np.cos)
        table[:, 0::2] = first(angles)
        table[:, 1::2] = second(angles)
        if bug == "column_exponent":
            j = np.arange(depth)[None, :]
            table = np.where(
                j % 2 == 0, np.sin(pos / 10000 ** (j / depth)), np.cos(pos / 10000 ** (j / depth))
            )
        return table.T if bug == "transposed" else table

    return positional_encoding


def test_positional_encoding_checker_accepts_correct_implementation():
    exercises.check_positional_encoding(make_positional_encoding())
    # the accepted table is section 3.5's: PE(pos, 2i) = sin(pos / 10000^(2i/d)), cos at 2i+1
    table = make_positional_encoding()(3, 4)
    expected = [
        [0, 1, 0, 1],
        [np.sin(1), np.cos(1), np.sin(0.01), np.cos(0.01)],
        [np.sin(2), np.cos(2), np.sin(0.02), np.cos(0.02)],
    ]
    np.testing.assert_allclose(table, expected, atol=1e-12)


@pytest.mark.parametrize(
    "bug, message",
    [
        ("concatenated", "concatenated layout"),
        ("swapped", "sine and cosine swapped"),
        ("exponent_i", r"10000\^\(i/d\)"),
        ("column_exponent", "share the frequency"),
        ("from_one", "positions start at 1"),
        ("transposed", "transposed"),
    ],
)
def test_positional_encoding_checker_names_the_mistake(bug, message):
    with pytest.raises(AssertionError, match=message) as info:
        exercises.check_positional_encoding(make_positional_encoding(bug))
    assert "section 3.5" in str(info.value)


# --------------------------------------------------------------------------- multi-head attention


class StudentMultiHeadAttention(keras.layers.Layer):
    """A student's layer: four Dense projections, no build() method."""

    bug = None

    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.d_model = d_model
        self.num_heads = num_heads
        self.d_head = d_model // num_heads
        self.wq = keras.layers.Dense(d_model)
        self.wk = keras.layers.Dense(d_model)
        self.wv = keras.layers.Dense(d_model)
        self.wo = keras.layers.Dense(d_model)

    def split_heads(self, x):
        batch = ops.shape(x)[0]
        if self.bug == "split_no_transpose":
            return ops.reshape(x, (batch, self.num_heads, -1, self.d_head))
        x = ops.reshape(x, (batch, -1, self.num_heads, self.d_head))
        return ops.transpose(x, (0, 2, 1, 3))  # (batch, heads, len, d_head)

    def call(self, query, value, key=None, attention_mask=None):
        key = value if key is None else key
        if self.bug == "key_value_swapped":
            key, value = value, key
        q = self.split_heads(self.wq(query))
        k = self.split_heads(self.wk(key))
        v = self.split_heads(self.wv(value))
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
        if self.bug == "scale_d_model":
            scores = scores / np.sqrt(self.d_model)
        elif self.bug == "scale_d":
            scores = scores / self.d_head
        elif self.bug != "no_scale":
            scores = scores / np.sqrt(self.d_head)
        if attention_mask is not None:
            mask = ops.expand_dims(ops.convert_to_tensor(attention_mask), 1)
            if self.bug == "mask_inverted":
                mask = ops.logical_not(mask)
            scores = ops.where(mask, scores, -1e9)
        weights = ops.softmax(scores, axis=-2 if self.bug == "softmax_queries" else -1)
        out = ops.transpose(ops.matmul(weights, v), (0, 2, 1, 3))
        out = ops.reshape(out, (ops.shape(out)[0], -1, self.d_model))
        return self.wo(out)


def mha_with(bug):
    return type(f"MHA_{bug}", (StudentMultiHeadAttention,), {"bug": bug})


class KerasWrappedAttention(keras.layers.Layer):
    """Correct, built on keras.layers.MultiHeadAttention (kernels (d, h, dh), reshaped in)."""

    def __init__(self, d_model, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.mha = keras.layers.MultiHeadAttention(num_heads, d_model // num_heads)

    def call(self, query, value, key=None, attention_mask=None):
        return self.mha(query, value, key=key, attention_mask=attention_mask)


def test_multi_head_attention_checker_accepts_correct_layers():
    exercises.check_multi_head_attention(StudentMultiHeadAttention)
    exercises.check_multi_head_attention(KerasWrappedAttention)


@pytest.mark.parametrize(
    "bug, message",
    [
        ("no_scale", "not scaled"),
        ("scale_d", "divided by d_head"),
        ("scale_d_model", "sqrt\\(d_model\\)"),
        ("softmax_queries", "softmax over the queries"),
        ("mask_inverted", "mask polarity inverted"),
        ("split_no_transpose", "wrong head split"),
        ("key_value_swapped", "key and value swapped"),
    ],
)
def test_multi_head_attention_checker_names_the_mistake(bug, message):
    with pytest.raises(AssertionError, match=message) as info:
        exercises.check_multi_head_attention(mha_with(bug))
    assert "section 3.2" in str(info.value)


def test_multi_head_attention_checker_names_the_weight_layout():
    class NoBias(StudentMultiHeadAttention):
        def __init__(self, d_model, num_heads, **kwargs):
            super().__init__(d_model, num_heads, **kwargs)
            self.wo = keras.layers.Dense(d_model, use_bias=False)

    with pytest.raises(AssertionError, match="should hold 8 trainable weights"):
        exercises.check_multi_head_attention(NoBias)


# --------------------------------------------------------------------------- Add & Norm, FFN


class StudentAddNorm(keras.layers.Layer):
    bug = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.norm = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, sublayer_output):
        if self.bug == "no_residual":
            return self.norm(sublayer_output)
        if self.bug == "norm_sublayer":  # x + LayerNorm(sublayer_output): not pre-LN
            return x + self.norm(sublayer_output)
        if self.bug == "forgot_norm":
            return x + sublayer_output
        if self.bug == "norm_then_add":
            return self.norm(x) + sublayer_output
        return self.norm(x + sublayer_output)


def test_add_norm_checker():
    exercises.check_add_norm(StudentAddNorm)
    for bug, message in (
        ("no_residual", "no residual"),
        ("norm_sublayer", "x \\+ LayerNorm\\(sublayer_output\\): the sub-layer's output"),
        ("norm_then_add", "add first"),
        ("forgot_norm", "no normalization"),
    ):
        cls = type(bug, (StudentAddNorm,), {"bug": bug})
        with pytest.raises(AssertionError, match=message) as info:
            exercises.check_add_norm(cls)
        assert "section 3.1" in str(info.value)


class StudentFeedForward(keras.layers.Layer):
    bug = None

    def __init__(self, d_model, dff, **kwargs):
        super().__init__(**kwargs)
        activation = {"no_relu": None, "gelu": "gelu"}.get(self.bug, "relu")
        self.inner = keras.layers.Dense(dff, activation=activation)
        self.outer = keras.layers.Dense(
            d_model, activation="relu" if self.bug == "relu_out" else None
        )

    def call(self, x):
        y = self.outer(self.inner(x))
        return x + y if self.bug == "residual" else y


def test_feed_forward_checker():
    exercises.check_feed_forward(StudentFeedForward)
    for bug, message in (
        ("no_relu", "no ReLU"),
        ("relu_out", "also applied to the output"),
        ("gelu", "GELU"),
        ("residual", "residual is added"),
    ):
        cls = type(bug, (StudentFeedForward,), {"bug": bug})
        with pytest.raises(AssertionError, match=message) as info:
            exercises.check_feed_forward(cls)
        assert "section 3.3" in str(info.value)


# --------------------------------------------------------------------------- encoder / decoder


class StudentEncoderLayer(keras.layers.Layer):
    bug = None

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        self.attention = StudentMultiHeadAttention(d_model, num_heads)
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.inner = keras.layers.Dense(dff, activation="relu")
        self.outer = keras.layers.Dense(d_model)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, padding_mask=None):
        n = ops.shape(x)[1]
        mask = None
        if padding_mask is not None and self.bug != "ignore_mask":
            mask = ops.repeat(ops.expand_dims(padding_mask, 1), n, axis=1)  # (batch, q, kv)
        if self.bug == "causal":
            causal = ops.tril(ops.ones((n, n), "bool"))[None]
            mask = causal if mask is None else ops.logical_and(mask, causal)
        if self.bug == "pre_ln":
            h = self.norm1(x)
            x = x + self.attention(h, h, attention_mask=mask)
            return x + self.outer(self.inner(self.norm2(x)))
        a = self.attention(x, x, attention_mask=mask)
        x = self.norm1(a if self.bug == "no_residual" else x + a)
        f = self.outer(self.inner(x))
        return self.norm2(f if self.bug == "no_residual" else x + f)


def test_encoder_layer_checker():
    exercises.check_encoder_layer(StudentEncoderLayer)
    for bug, message in (
        ("pre_ln", "pre-LN"),
        ("no_residual", "residual missing"),
        ("ignore_mask", "padding_mask ignored"),
        ("causal", "causal mask in the encoder"),
    ):
        cls = type(bug, (StudentEncoderLayer,), {"bug": bug})
        with pytest.raises(AssertionError, match=message) as info:
            exercises.check_encoder_layer(cls)
        assert "section 3" in str(info.value)


class StudentDecoderLayer(keras.layers.Layer):
    bug = None

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = StudentMultiHeadAttention(d_model, num_heads)
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.cross_attention = StudentMultiHeadAttention(d_model, num_heads)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.inner = keras.layers.Dense(dff, activation="relu")
        self.outer = keras.layers.Dense(d_model)
        self.norm3 = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, context, padding_mask=None, context_padding_mask=None):
        t = ops.shape(x)[1]
        self_mask = ops.tril(ops.ones((t, t), "bool"))[None]
        if self.bug == "not_causal":
            self_mask = ops.ones((1, t, t), "bool")
        if padding_mask is not None:
            self_mask = ops.logical_and(self_mask, ops.expand_dims(padding_mask, 1))
        cross_mask = None
        if context_padding_mask is not None and self.bug != "ignore_context_mask":
            cross_mask = ops.repeat(ops.expand_dims(context_padding_mask, 1), t, axis=1)
        if self.bug == "cross_first":
            x = self.norm1(x + self.self_attention(x, context, attention_mask=cross_mask))
            x = self.norm2(x + self.cross_attention(x, x, attention_mask=self_mask))
        else:
            x = self.norm1(x + self.self_attention(x, x, attention_mask=self_mask))
            x = self.norm2(x + self.cross_attention(x, context, attention_mask=cross_mask))
        return self.norm3(x + self.outer(self.inner(x)))


def test_decoder_layer_checker():
    exercises.check_decoder_layer(StudentDecoderLayer)
    for bug, message in (
        ("not_causal", "not causal"),
        ("cross_first", "cross-attention before self-attention"),
        ("ignore_context_mask", "context_padding_mask ignored"),
    ):
        cls = type(bug, (StudentDecoderLayer,), {"bug": bug})
        with pytest.raises(AssertionError, match=message) as info:
            exercises.check_decoder_layer(cls)
        assert "section 3" in str(info.value)

    class NoContext(StudentDecoderLayer):
        def call(self, x, context, padding_mask=None, context_padding_mask=None):
            return super().call(x, ops.zeros_like(context), padding_mask, None)

    with pytest.raises(AssertionError, match="section 3.2.3"):
        exercises.check_decoder_layer(NoContext)


# --------------------------------------------------------------------------- masked loss


def make_loss(bug=None):
    def masked_loss(labels, logits, label_smoothing=0.0):
        labels = np.asarray(labels)
        logits = np.asarray(logits, "float64")
        if bug == "probabilities":
            log_p = np.log(np.clip(logits / logits.sum(-1, keepdims=True), 1e-7, 1 - 1e-7))
        else:
            log_p = logits - logits.max(-1, keepdims=True)
            log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
        token = -np.take_along_axis(log_p, labels[..., None], -1)[..., 0]
        if bug != "smoothing_wrong":
            token = (1 - label_smoothing) * token + label_smoothing * -log_p.mean(-1)
        real = labels != 0
        if bug == "pad_counted":
            return token.mean()
        if bug == "divide_all":
            return (token * real).sum() / labels.size
        if bug == "sentence_means":
            return np.mean([row[m].mean() for row, m in zip(token, real, strict=True)])
        return (token * real).sum() / real.sum()

    return masked_loss


def keras_loss(labels, logits):
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    return loss(labels, logits)


def test_masked_loss_checker():
    exercises.check_masked_loss(make_loss())
    exercises.check_masked_loss(keras_loss)
    # the accepted NumPy loss is Keras's SparseCategoricalCrossentropy(ignore_class=0)
    rng = np.random.default_rng(0)
    labels = np.array([[3, 1, 0, 0], [2, 4, 1, 0]])
    logits = rng.normal(size=(2, 4, 5)).astype("float32")
    np.testing.assert_allclose(make_loss()(labels, logits), keras_loss(labels, logits), rtol=1e-5)
    for bug, message in (
        ("pad_counted", "padding counted"),
        ("divide_all", "divided by all positions"),
        ("sentence_means", "per-sentence means"),
        ("probabilities", "logits read as probabilities"),
        ("smoothing_wrong", "section 5.4"),
    ):
        with pytest.raises(AssertionError, match=message) as info:
            exercises.check_masked_loss(make_loss(bug))
        assert "section 5" in str(info.value)
