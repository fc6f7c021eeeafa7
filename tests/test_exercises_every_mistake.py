"""Every mistake of issue 51 is named, whichever attention layer the student uses, and no raw
TensorFlow error reaches the student (issue 51, part 1).

Each mistake is written as a student would write it; the checker must reject it with a message
that names the cause, never the generic "differs from", and never with TensorFlow's own noise
(`{{function_node ...}}`, `[Op:...]`). The correct versions stay silent.
"""

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer import exercises
from tests.test_exercises import StudentMultiHeadAttention

GENERIC = "differs from"
ATTENTIONS = [kt.layers.MultiHeadAttention, keras.layers.MultiHeadAttention]
TF_NOISE = ("{{function_node", "[Op:", "Exception encountered")


def assert_named(info, *words):
    message = str(info.value)
    for word in words:
        assert word in message, message
    assert GENERIC not in message, message
    for noise in TF_NOISE:
        assert noise not in message, message
    return message


# --------------------------------------------------------------------------- 01: attention


def softmax(scores):
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def numpy_attention(bug=None):
    """Notebook 01's attention_numpy, with one way of writing the mask wrong."""

    def attention(q, k, v, mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if mask is not None:
            mask = np.asarray(mask)
            if bug == "plus_on_masked":  # +1e9 where -1e9 belongs
                scores = scores + (1.0 - mask) * 1e9
            elif bug == "plus_on_masked_f32":
                scores = scores.astype("float32") + (1 - mask.astype("float32")) * np.float32(1e9)
            elif bug == "plus_on_allowed_f32":  # +1e9 on the keys that may be attended to
                scores = scores.astype("float32") + mask.astype("float32") * np.float32(1e9)
            elif bug == "minus_on_allowed":
                scores = scores - mask * 1e9
            elif bug == "multiply":  # a masked score becomes 0, not a large negative number
                scores = scores * mask
            else:
                scores = np.where(mask, scores, -1e9)
        weights = softmax(scores)
        return weights @ v, weights

    return attention


def test_correct_numpy_attention_passes():
    exercises.check_scaled_dot_product_attention(numpy_attention())


@pytest.mark.parametrize(
    "bug, words",
    [
        ("plus_on_masked", ["wrong sign", "+1e9"]),
        ("plus_on_masked_f32", ["wrong sign", "+1e9"]),
        ("minus_on_allowed", ["wrong sign"]),
        ("plus_on_allowed_f32", ["+1e9", "allowed keys", "float32"]),
        ("multiply", ["multiplied by the mask", "exp(0)"]),  # a mistake of our own
    ],
)
def test_attention_mask_mistakes_are_named(bug, words):
    with np.errstate(all="ignore"), pytest.raises(AssertionError) as info:
        exercises.check_scaled_dot_product_attention(numpy_attention(bug))
    assert_named(info, *words, "section 3.2.1")


# --------------------------------------------------------------------------- 03: multi-head


class AdditiveMaskAttention(StudentMultiHeadAttention):
    """Notebook 03's layer with the mask added to the scores (float32, as Keras computes)."""

    def call(self, query, value, key=None, attention_mask=None):
        key = value if key is None else key
        q, k, v = (
            self.split_heads(d(x)) for d, x in ((self.wq, query), (self.wk, key), (self.wv, value))
        )
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) / np.sqrt(self.d_head)
        if attention_mask is not None:
            allowed = ops.cast(ops.expand_dims(attention_mask, 1), "float32")
            if self.bug == "plus_on_masked":
                scores = scores + (1.0 - allowed) * 1e9
            elif self.bug == "plus_on_allowed":
                scores = scores + allowed * 1e9
            else:
                scores = scores + (1.0 - allowed) * -1e9  # right: -1e9 on the masked keys
        out = ops.transpose(ops.matmul(ops.softmax(scores, axis=-1), v), (0, 2, 1, 3))
        return self.wo(ops.reshape(out, (ops.shape(out)[0], -1, self.d_model)))


def additive(bug):
    return type(f"Additive_{bug}", (AdditiveMaskAttention,), {"bug": bug})


def test_a_right_additive_mask_passes():
    exercises.check_multi_head_attention(additive(None))


@pytest.mark.parametrize(
    "bug, words",
    [
        ("plus_on_masked", ["wrong sign", "+1e9"]),
        ("plus_on_allowed", ["+1e9", "allowed keys"]),
    ],
)
def test_multi_head_additive_mask_mistakes_are_named(bug, words):
    with pytest.raises(AssertionError) as info:
        exercises.check_multi_head_attention(additive(bug))
    message = assert_named(info, *words)
    assert "head split" not in message and "projections" not in message, message


# --------------------------------------------------------------------------- 04: Add & Norm


class AddNorm(keras.layers.Layer):
    bug = None

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, sublayer_output):
        if self.bug == "norm_sublayer":
            return x + self.layer_norm(sublayer_output)
        return self.layer_norm(x + sublayer_output)


def test_normalizing_the_sublayer_output_is_not_called_pre_ln():
    exercises.check_add_norm(AddNorm)
    buggy = type("NormSublayer", (AddNorm,), {"bug": "norm_sublayer"})
    with pytest.raises(AssertionError) as info:
        exercises.check_add_norm(buggy)
    message = assert_named(info, "x + LayerNorm(sublayer_output)", "not pre-LN")
    assert "x + Sublayer(LayerNorm(x))" in message, message
    assert not message.split(":", 1)[1].lstrip().startswith("pre-LN"), message


class Encoder(keras.layers.Layer):
    """Notebook 04's MyEncoderLayer on kt.layers.MultiHeadAttention; `bug` switches in one
    mistake."""

    bug = None
    attention_class = kt.layers.MultiHeadAttention

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        self.attention = self.attention_class(num_heads, key_dim=d_model // num_heads)
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.inner = keras.layers.Dense(dff, activation="relu")
        self.outer = keras.layers.Dense(d_model)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, padding_mask=None):
        mask = None
        if padding_mask is not None:
            keys = ops.expand_dims(ops.cast(padding_mask, "bool"), 1)  # (batch, 1, len)
            if self.bug == "inverted_padding":
                keys = ops.logical_not(keys)
            mask = ops.logical_and(keys, ops.ones_like(ops.swapaxes(keys, 1, 2)))

        def attend(t):
            return self.attention(t, t, attention_mask=mask)

        def ffn(t):
            return self.outer(self.inner(t))

        if self.bug == "pre_ln_residual_after_norm":  # the residual reads the normalized x
            n = self.norm1(x)
            h = n + attend(n)
            m = self.norm2(h)
            return m + ffn(m)
        if self.bug == "pre_ln_attention_residual_after_norm":
            n = self.norm1(x)
            h = n + attend(n)
            return self.norm2(h + ffn(h))
        if self.bug == "pre_ln":
            h = x + attend(self.norm1(x))
            return h + ffn(self.norm2(h))
        h = self.norm1(x + attend(x))
        return self.norm2(h + ffn(h))


def encoder_with(bug, attention=kt.layers.MultiHeadAttention):
    return type(f"Encoder_{bug}", (Encoder,), {"bug": bug, "attention_class": attention})


@pytest.mark.parametrize("attention", ATTENTIONS, ids=["kt", "keras"])
def test_correct_encoder_on_either_attention_passes(attention):
    exercises.check_encoder_layer(encoder_with(None, attention))


@pytest.mark.parametrize(
    "bug, words",
    [
        (
            "pre_ln_residual_after_norm",
            [
                "every sub-layer",
                "residual taken after the norm",
                "LayerNorm(x) + Sublayer(LayerNorm(x))",
            ],
        ),
        ("pre_ln_attention_residual_after_norm", ["self-attention sub-layer", "after the norm"]),
        ("pre_ln", ["pre-LN", "x + Sublayer(LayerNorm(x))"]),
        ("inverted_padding", ["padding mask inverted"]),  # a mistake of our own
    ],
)
@pytest.mark.parametrize("attention", ATTENTIONS, ids=["kt", "keras"])
def test_encoder_mistakes_are_named_whichever_attention(bug, words, attention):
    with pytest.raises(AssertionError) as info:
        exercises.check_encoder_layer(encoder_with(bug, attention))
    assert_named(info, *words)


# --------------------------------------------------------------------------- 05: decoder


class Decoder(keras.layers.Layer):
    """Notebook 05's MyDecoderLayer on kt.layers.MultiHeadAttention, as the exercise
    recommends; `bug` switches in one mistake."""

    bug = None
    attention = kt.layers.MultiHeadAttention

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        key_dim = d_model // num_heads
        self.self_attention = self.attention(num_heads, key_dim=key_dim)
        self.norm1 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.cross_attention = self.attention(num_heads, key_dim=key_dim)
        self.norm2 = keras.layers.LayerNormalization(epsilon=1e-6)
        self.inner = keras.layers.Dense(dff, activation="relu")
        self.outer = keras.layers.Dense(d_model)
        self.norm3 = keras.layers.LayerNormalization(epsilon=1e-6)

    def call(self, x, context, padding_mask=None, context_padding_mask=None):
        t = ops.shape(x)[1]
        diagonal = -1 if self.bug == "strict_causal" else 0
        self_mask = ops.tril(ops.ones((t, t), "bool"), diagonal)[None]
        if padding_mask is not None:
            self_mask = ops.logical_and(self_mask, ops.expand_dims(padding_mask, 1))
        cross_mask = None
        if context_padding_mask is not None:
            keys = ops.expand_dims(ops.cast(context_padding_mask, "bool"), 1)
            rows = ops.shape(context)[1] if self.bug == "cross_queries_from_context" else t
            cross_mask = ops.logical_and(keys, ops.ones((1, rows, 1), "bool"))
        h = self.norm1(x + self.self_attention(x, x, attention_mask=self_mask))
        if self.bug == "cross_queries_from_context":  # queries from the encoder, keys from h
            h = self.norm2(h + self.cross_attention(context, h, attention_mask=None))
        elif self.bug == "cross_mask_from_target":  # the target's padding mask for the source
            target = ops.ones(ops.shape(x)[:2], "bool") if padding_mask is None else padding_mask
            tgt = ops.expand_dims(ops.cast(target, "bool"), 1)
            mask = ops.logical_and(tgt, ops.ones((1, t, 1), "bool"))
            h = self.norm2(h + self.cross_attention(h, context, attention_mask=mask))
        else:
            h = self.norm2(h + self.cross_attention(h, context, attention_mask=cross_mask))
        return self.norm3(h + self.outer(self.inner(h)))


def decoder_with(bug, attention=kt.layers.MultiHeadAttention):
    return type(f"Decoder_{bug}", (Decoder,), {"bug": bug, "attention": attention})


@pytest.mark.parametrize("attention", ATTENTIONS, ids=["kt", "keras"])
def test_correct_decoder_on_either_attention_passes(attention):
    exercises.check_decoder_layer(decoder_with(None, attention))


@pytest.mark.parametrize("attention", ATTENTIONS, ids=["kt", "keras"])
def test_strict_causal_mask_is_named_whichever_attention(attention):
    with pytest.raises(AssertionError) as info:
        exercises.check_decoder_layer(decoder_with("strict_causal", attention))
    assert_named(info, "hides the diagonal", "np.tril(ones)")


@pytest.mark.parametrize("attention", ATTENTIONS, ids=["kt", "keras"])
def test_cross_attention_queries_from_the_encoder_are_named_without_tf_noise(attention):
    with pytest.raises(AssertionError) as info:
        exercises.check_decoder_layer(decoder_with("cross_queries_from_context", attention))
    message = assert_named(info, "queries", "encoder output", "h1")
    assert "Incompatible shapes" not in message, message


def test_cross_attention_mask_from_the_target_is_named_without_tf_noise():  # our own mistake
    with pytest.raises(AssertionError) as info:
        exercises.check_decoder_layer(decoder_with("cross_mask_from_target"))
    assert_named(info, "context_padding_mask", "source")


def test_run_strips_tensorflow_noise():
    import tensorflow as tf

    def broken(a, b):
        return tf.add(a, b)

    with pytest.raises(AssertionError) as info:
        exercises.check_scaled_dot_product_attention(
            lambda q, k, v, mask=None: (broken(q, k), broken(q, k))
        )
    message = str(info.value)
    for noise in TF_NOISE:
        assert noise not in message, message
    assert "shapes" in message.lower(), message


# --------------------------------------------------------------------------- 07: the loss


def masked_loss(bug=None):
    def loss(labels, logits, label_smoothing=0.0):
        log_p = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
        labels = ops.cast(labels, "int32")
        token = -ops.take_along_axis(log_p, ops.expand_dims(labels, -1), axis=-1)[..., 0]
        if bug == "ignores_smoothing":
            label_smoothing = 0.0
        if label_smoothing:
            vocab = ops.shape(logits)[-1]
            if bug == "smoothing_over_v_minus_1":  # eps / (V - 1) on every other word
                p_label = ops.take_along_axis(log_p, ops.expand_dims(labels, -1), axis=-1)[..., 0]
                others = -(ops.sum(log_p, axis=-1) - p_label) / (vocab - 1)
                token = (1 - label_smoothing) * token + label_smoothing * others
            elif bug == "one_hot_kept":  # target one_hot + eps / V: the one-hot not scaled
                token = token - label_smoothing * ops.mean(log_p, axis=-1)
            else:
                token = (1 - label_smoothing) * token - label_smoothing * ops.mean(log_p, axis=-1)
        real = ops.cast(ops.not_equal(labels, 0), "float32")
        return ops.sum(token * real) / ops.maximum(ops.sum(real), 1.0)

    return loss


def test_correct_masked_loss_passes():
    exercises.check_masked_loss(masked_loss())


@pytest.mark.parametrize(
    "bug, words",
    [
        ("smoothing_over_v_minus_1", ["eps / (vocab_size - 1)", "eps / vocab_size"]),
        ("ignores_smoothing", ["label_smoothing", "ignored"]),
        ("one_hot_kept", ["(1 - eps)"]),  # a mistake of our own
    ],
)
def test_label_smoothing_mistakes_are_named(bug, words):
    with pytest.raises(AssertionError) as info:
        exercises.check_masked_loss(masked_loss(bug))
    assert_named(info, *words, "section 5.4")


# --------------------------------------------------------------------------- 06: the model


def build_with_layers(encoders, decoders):
    """Notebook 06's build_by_hand with the given numbers of layers (a loop off by one)."""

    def build_by_hand(source_vocab_size, target_vocab_size, sizes):
        source = keras.Input(shape=(None,), dtype="int32", name="source")
        target = keras.Input(shape=(None,), dtype="int32", name="target")
        source_mask = kt.layers.PaddingMask()(source)
        target_mask = kt.layers.PaddingMask()(target)
        d_model = sizes["d_model"]
        x = kt.layers.PositionalEmbedding(source_vocab_size, d_model, mask_zero=False)(source)
        for _ in range(encoders(sizes["num_layers"])):
            x = kt.layers.EncoderLayer(sizes["num_heads"], sizes["dff"])(
                x, padding_mask=source_mask
            )
        y = kt.layers.PositionalEmbedding(target_vocab_size, d_model, mask_zero=False)(target)
        for _ in range(decoders(sizes["num_layers"])):
            y = kt.layers.DecoderLayer(sizes["num_heads"], sizes["dff"])(
                y, x, padding_mask=target_mask, context_padding_mask=source_mask
            )
        logits = keras.layers.Dense(target_vocab_size)(y)
        return keras.Model({"source": source, "target": target}, logits)

    return build_by_hand


@pytest.mark.parametrize(
    "encoders, decoders, words",
    [
        (lambda n: n - 1, lambda n: n - 1, ["only 1 of the 2 encoder layers", "fewer than"]),
        (lambda n: n, lambda n: n + 1, ["3 decoder layers", "num_layers"]),
    ],
)
def test_a_wrong_layer_count_fails_through_the_checker(encoders, decoders, words):
    """Notebook 06's student version checks the count only through the checker (issue 51)."""
    with pytest.raises(AssertionError) as info:
        exercises.check_functional_transformer(build_with_layers(encoders, decoders))
    assert_named(info, *words, "section 3.1")


def test_notebook_06_checks_the_count_only_through_the_checker():
    import json
    import pathlib

    notebook = pathlib.Path(__file__).parents[1] / "tutorials" / "06_functional_models.ipynb"
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        source = "".join(cell["source"])
        if "check_functional_transformer(build_by_hand)" in source:
            before = source.split("check_functional_transformer(build_by_hand)")[0]
            assert "assert by_hand" not in before, before
            break
    else:
        pytest.fail("notebook 06 does not call check_functional_transformer(build_by_hand)")
