"""The encoder-layer, decoder-layer and Functional-model checkers name the cause (issue 37).

Each mistake is written here as a student would write it, in Keras; the checker must reject it
with the message that names that mistake (found by comparing the student's output with the
layer computed in NumPy with each known mistake), never with the generic "differs from". The
attention checker must reject `-inf` masking, which gives NaN on a fully masked row.
"""

import re

import keras
import numpy as np
import pytest
from keras import ops

import keras_transformer as kt
from keras_transformer import exercises

GENERIC = "differs from"


class Attention(keras.layers.Layer):
    """A student's multi-head attention; `fill` is what masked scores become."""

    def __init__(self, d_model, num_heads, fill=-1e9, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.num_heads, self.fill = d_model, num_heads, fill
        self.d_head = d_model // num_heads
        self.wq, self.wk, self.wv, self.wo = (keras.layers.Dense(d_model) for _ in range(4))

    def split(self, x):
        x = ops.reshape(x, (ops.shape(x)[0], -1, self.num_heads, self.d_head))
        return ops.transpose(x, (0, 2, 1, 3))  # (batch, heads, len, d_head)

    def call(self, query, value, attention_mask=None):
        q, k, v = self.split(self.wq(query)), self.split(self.wk(value)), self.split(self.wv(value))
        scores = ops.matmul(q, ops.swapaxes(k, -1, -2)) / np.sqrt(self.d_head)
        if attention_mask is not None:  # (batch, q, kv) -> (batch, 1, q, kv)
            scores = ops.where(ops.expand_dims(attention_mask, 1), scores, self.fill)
        out = ops.transpose(ops.matmul(ops.softmax(scores, axis=-1), v), (0, 2, 1, 3))
        return self.wo(ops.reshape(out, (ops.shape(out)[0], -1, self.d_model)))


def layer_norm():
    return keras.layers.LayerNormalization(epsilon=1e-6)


class Encoder(keras.layers.Layer):
    """A student's encoder layer; `bug` switches in one mistake."""

    bug = None

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        fill = float("-inf") if self.bug and self.bug.endswith("_inf") else -1e9
        self.attention = Attention(d_model, num_heads, fill)
        self.norm1 = layer_norm()
        activation = {"no_activation": None, "gelu": "gelu"}.get(self.bug, "relu")
        self.inner = keras.layers.Dense(dff, activation=activation)
        self.outer = keras.layers.Dense(d_model)
        self.norm2 = layer_norm()

    def mask(self, padding_mask, n):
        bug = self.bug or ""
        if padding_mask is None or bug == "ignore_mask":
            mask = ops.ones((1, n, n), "bool")
        elif bug.startswith("mask_query_axis"):
            mask = ops.repeat(ops.expand_dims(padding_mask, 2), n, axis=2)  # padding[b, q]
        elif bug == "mask_both_axes":
            mask = ops.logical_and(
                ops.expand_dims(padding_mask, 1), ops.expand_dims(padding_mask, 2)
            )
        else:
            mask = ops.repeat(ops.expand_dims(padding_mask, 1), n, axis=1)  # padding[b, k]
        if bug == "causal":
            mask = ops.logical_and(mask, ops.tril(ops.ones((n, n), "bool"))[None])
        return mask

    def ffn(self, h):
        return self.outer(self.inner(h))

    def call(self, x, padding_mask=None):
        mask, bug = self.mask(padding_mask, ops.shape(x)[1]), self.bug or ""

        def attend(t):
            return self.attention(t, t, attention_mask=mask)

        if bug in ("pre_ln", "pre_ln_attention"):
            h = x + attend(self.norm1(x))
        elif bug in ("norm_plus", "norm_plus_attention"):
            h = self.norm1(x) + attend(x)
        elif bug in ("no_residuals", "no_attention_residual"):
            h = self.norm1(attend(x))
        else:
            h = self.norm1(x + attend(x))
        if bug == "pre_ln":
            return h + self.ffn(self.norm2(h))
        if bug in ("norm_plus", "norm_plus_ffn"):
            return self.norm2(h) + self.ffn(h)
        if bug in ("no_residuals", "no_ffn_residual"):
            return self.norm2(self.ffn(h))
        if bug == "ffn_residual_from_x":
            return self.norm2(x + self.ffn(h))
        if bug == "ffn_reads_x":
            return self.norm2(h + self.ffn(x))
        if bug == "ffn_doubled":  # a mistake the checker has no name for
            return self.norm2(h + 2 * self.ffn(h))
        return self.norm2(h + self.ffn(h))


def encoder_with(bug):
    return type(f"Encoder_{bug}", (Encoder,), {"bug": bug})


def test_correct_encoder_layers_pass():
    exercises.check_encoder_layer(Encoder)
    # Masking padded queries as well as keys only changes padded positions: accepted.
    exercises.check_encoder_layer(encoder_with("mask_both_axes"))


@pytest.mark.parametrize(
    "bug, message",
    [
        ("no_attention_residual", "self-attention sub-layer: residual missing"),
        ("no_ffn_residual", "feed-forward sub-layer: residual missing"),
        ("no_residuals", "every sub-layer (self-attention, feed-forward): residual missing"),
        ("pre_ln", "every sub-layer (self-attention, feed-forward): pre-LN"),
        ("pre_ln_attention", "self-attention sub-layer: pre-LN"),
        (
            "norm_plus",
            "every sub-layer (self-attention, feed-forward): LayerNorm(x) + Sublayer",
        ),
        ("norm_plus_attention", "self-attention sub-layer: LayerNorm(x) + MultiHead(x)"),
        ("norm_plus_ffn", "feed-forward sub-layer: LayerNorm(x) + FFN(x)"),
        ("ffn_residual_from_x", "feed-forward residual adds the layer input x"),
        ("ffn_reads_x", "feed-forward network reads the layer input x"),
        ("mask_query_axis", "applied on the query axis"),
        ("ignore_mask", "padding_mask ignored"),
        ("causal", "causal mask in the encoder"),
        ("no_activation", "no ReLU"),
        ("gelu", "GELU in the feed-forward network"),
    ],
)
def test_encoder_checker_names_the_mistake(bug, message):
    with pytest.raises(AssertionError, match=re.escape(message)) as info:
        exercises.check_encoder_layer(encoder_with(bug))
    assert GENERIC not in str(info.value)
    assert "section 3" in str(info.value)


def test_encoder_nan_from_minus_infinity_on_the_query_axis_is_named():
    with pytest.raises(AssertionError) as info:
        exercises.check_encoder_layer(encoder_with("mask_query_axis_inf"))
    message = str(info.value)
    assert "NaN at sentence 1, positions 4, 5" in message, message
    assert "only padded positions" in message and "-inf" in message
    assert "applied on the query axis" in message  # the real positions read padded keys


def test_unnamed_encoder_mistake_gets_the_exact_formula():
    with pytest.raises(AssertionError, match=GENERIC) as info:
        exercises.check_encoder_layer(encoder_with("ffn_doubled"))
    assert "h = LayerNorm(x + MultiHead(x, x, x))" in str(info.value)
    assert "out = LayerNorm(h + FFN(h))" in str(info.value)


class Decoder(keras.layers.Layer):
    """A student's decoder layer; `bug` switches in one mistake."""

    bug = None

    def __init__(self, d_model, num_heads, dff, **kwargs):
        super().__init__(**kwargs)
        fill = float("-inf") if self.bug and self.bug.endswith("_inf") else -1e9
        self.self_attention = Attention(d_model, num_heads, fill)
        self.norm1 = layer_norm()
        self.cross_attention = Attention(d_model, num_heads, fill)
        self.norm2 = layer_norm()
        activation = {"no_activation": None, "gelu": "gelu"}.get(self.bug, "relu")
        self.inner = keras.layers.Dense(dff, activation=activation)
        self.outer = keras.layers.Dense(d_model)
        self.norm3 = layer_norm()

    def call(self, x, context, padding_mask=None, context_padding_mask=None):
        bug, t = self.bug or "", ops.shape(x)[1]
        causal = ops.tril(ops.ones((t, t), "bool"))
        if bug == "not_causal":
            causal = ops.ones((t, t), "bool")
        elif bug.startswith("strict_causal"):
            causal = ops.tril(ops.ones((t, t), "bool"), -1)
        elif bug == "triu":
            causal = ops.triu(ops.ones((t, t), "bool"))
        self_mask = ops.broadcast_to(causal[None], (ops.shape(x)[0], t, t))
        if padding_mask is not None:
            self_mask = ops.logical_and(self_mask, ops.expand_dims(padding_mask, 1))
        cross_mask = None
        if context_padding_mask is not None and bug != "ignore_context_mask":
            cross_mask = ops.repeat(ops.expand_dims(context_padding_mask, 1), t, axis=1)

        def attend_self(q):
            return self.self_attention(q, q, attention_mask=self_mask)

        def attend_cross(q):
            return self.cross_attention(q, context, attention_mask=cross_mask)

        if bug == "pre_ln":
            h1 = x + attend_self(self.norm1(x))
            h2 = h1 + attend_cross(self.norm2(h1))
            return h2 + self.outer(self.inner(self.norm3(h2)))
        if bug == "cross_first":
            h1 = self.norm1(x + self.self_attention(x, context, attention_mask=cross_mask))
            h2 = self.norm2(h1 + self.cross_attention(h1, h1, attention_mask=self_mask))
            return self.norm3(h2 + self.outer(self.inner(h2)))
        h1 = self.norm1(attend_self(x) if bug == "no_self_residual" else x + attend_self(x))
        if bug == "cross_query_from_x":
            h2 = self.norm2(h1 + attend_cross(x))
        elif bug == "cross_reads_x":
            h2 = self.norm2(x + attend_cross(x))
        elif bug == "cross_residual_from_x":
            h2 = self.norm2(x + attend_cross(h1))
        elif bug == "no_cross_residual":
            h2 = self.norm2(attend_cross(h1))
        elif bug == "norm_plus_cross":
            h2 = self.norm2(h1) + attend_cross(h1)
        else:
            h2 = self.norm2(h1 + attend_cross(h1))
        f = self.outer(self.inner(h2))
        if bug == "no_ffn_residual":
            return self.norm3(f)
        if bug == "ffn_residual_from_h1":
            return self.norm3(h1 + f)
        if bug == "ffn_doubled":
            return self.norm3(h2 + 2 * f)
        return self.norm3(h2 + f)


def decoder_with(bug):
    return type(f"Decoder_{bug}", (Decoder,), {"bug": bug})


def test_correct_decoder_layer_passes():
    exercises.check_decoder_layer(Decoder)


@pytest.mark.parametrize(
    "bug, message",
    [
        ("not_causal", "not causal"),
        ("strict_causal", "hides the diagonal"),
        ("triu", "turned around"),
        ("cross_first", "cross-attention before self-attention"),
        ("cross_query_from_x", "takes its queries from the layer input x"),
        ("cross_reads_x", "reads the layer input x (queries and residual)"),
        ("cross_residual_from_x", "cross-attention residual adds the layer input x"),
        ("no_self_residual", "causal self-attention sub-layer: residual missing"),
        ("no_cross_residual", "cross-attention sub-layer: residual missing"),
        ("no_ffn_residual", "feed-forward sub-layer: residual missing"),
        (
            "pre_ln",
            "every sub-layer (causal self-attention, cross-attention, feed-forward): pre-LN",
        ),
        ("norm_plus_cross", "cross-attention sub-layer: LayerNorm(x) + CrossAttention(x)"),
        ("ffn_residual_from_h1", "feed-forward residual adds h1"),
        ("ignore_context_mask", "context_padding_mask ignored"),
        ("no_activation", "no ReLU"),
        ("gelu", "GELU in the feed-forward network"),
    ],
)
def test_decoder_checker_names_the_mistake(bug, message):
    with pytest.raises(AssertionError, match=re.escape(message)) as info:
        exercises.check_decoder_layer(decoder_with(bug))
    assert GENERIC not in str(info.value)
    assert "section 3" in str(info.value)


def test_decoder_nan_from_a_strict_causal_mask_is_named():
    with pytest.raises(AssertionError) as info:
        exercises.check_decoder_layer(decoder_with("strict_causal_inf"))
    message = str(info.value)
    assert "NaN at sentence 0, position 0; sentence 1, position 0" in message, message
    assert "hides the diagonal" in message and "np.tril(ones)" in message


def test_decoder_messages_never_say_queries_come_from_x():
    """The right wiring is described so that no mistake fits it: queries from h1, not x."""
    with pytest.raises(AssertionError, match=GENERIC) as info:
        exercises.check_decoder_layer(decoder_with("ffn_doubled"))
    message = str(info.value)
    assert "queries from h1" in message and "queries from x" not in message, message
    assert exercises.check_decoder_layer.__doc__.count("queries from x") == 0


# --------------------------------------------------------------------------- the attention


def test_minus_infinity_masking_fails_on_a_fully_masked_row():
    def attention(query, key, value, mask=None):
        scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights = weights / weights.sum(-1, keepdims=True)
        return weights @ value, weights

    with np.errstate(invalid="ignore"), pytest.raises(AssertionError) as info:
        exercises.check_scaled_dot_product_attention(attention)
    message = str(info.value)
    assert "fully masked row" in message and "NaN" in message and "-inf" in message, message


def test_a_fully_masked_row_may_give_zeros_or_a_uniform_row():
    def attention(query, key, value, mask=None):  # zeros where nothing may be attended to
        out, weights = kt.layers.scaled_dot_product_attention(query, key, value, mask=mask)
        return out, weights

    exercises.check_scaled_dot_product_attention(attention)  # the package's: zeros


# --------------------------------------------------------------------------- Functional wiring


def make_build(bug=None):
    """Notebook 06's build_by_hand, with one wiring mistake."""

    def build_by_hand(source_vocab_size, target_vocab_size, sizes):
        source = keras.Input(shape=(None,), dtype="int32", name="source")
        target = keras.Input(shape=(None,), dtype="int32", name="target")
        source_mask = kt.layers.PaddingMask()(source)
        target_mask = kt.layers.PaddingMask()(target)
        implicit = bug == "implicit_masks"
        d_model, n = sizes["d_model"], sizes["num_layers"]
        embedded = kt.layers.PositionalEmbedding(source_vocab_size, d_model, mask_zero=implicit)(
            source
        )
        x, outputs = embedded, []
        for _ in range(n):
            layer = kt.layers.EncoderLayer(sizes["num_heads"], sizes["dff"])
            x_in = embedded if bug == "encoder_not_chained" else x
            if bug in ("no_masks", "encoder_unmasked", "implicit_masks"):
                x = layer(x_in)
            else:
                x = layer(x_in, padding_mask=source_mask)
            outputs.append(x)
        y = y_embedded = kt.layers.PositionalEmbedding(
            target_vocab_size, d_model, mask_zero=implicit
        )(target)
        for i in range(n):
            layer = kt.layers.DecoderLayer(sizes["num_heads"], sizes["dff"])
            context = {
                "context_is_embedding": embedded,
                "context_is_first_layer": outputs[0],
                "context_per_layer": outputs[i],
            }.get(bug, x)
            y_in = y_embedded if bug == "decoder_not_chained" else y
            if bug in ("no_masks", "cross_unmasked", "implicit_masks"):
                y = layer(y_in, context)
            else:
                y = layer(y_in, context, padding_mask=target_mask, context_padding_mask=source_mask)
        logits = keras.layers.Dense(target_vocab_size)(y)
        if bug == "softmax":
            logits = keras.layers.Softmax()(logits)
        return keras.Model({"source": source, "target": target}, logits)

    return build_by_hand


def test_correct_functional_models_pass():
    exercises.check_functional_transformer(make_build())
    exercises.check_functional_transformer(
        lambda s, t, sizes: kt.models.build_transformer(s, t, **sizes)
    )


@pytest.mark.parametrize(
    "bug, message",
    [
        ("no_masks", "no padding masks reach the attention layers"),
        ("encoder_unmasked", "the encoder layers get no padding_mask"),
        ("cross_unmasked", "the decoder layers get no context_padding_mask"),
        ("context_is_embedding", "only 0 of the 2 encoder layers are in the model"),
        ("context_is_first_layer", "only 1 of the 2 encoder layers are in the model"),
        ("context_per_layer", "decoder layer i reads encoder layer i's output"),
        ("encoder_not_chained", "only 1 of the 2 encoder layers are in the model"),
        ("decoder_not_chained", "only 1 of the 2 decoder layers are in the model"),
        ("softmax", "outputs probabilities"),
        ("implicit_masks", "get no padding mask: the padding is handled only by Keras's implicit"),
    ],
)
def test_functional_checker_names_the_mistake(bug, message):
    with pytest.raises(AssertionError, match=re.escape(message)) as info:
        exercises.check_functional_transformer(make_build(bug))
    assert "section 3" in str(info.value)


def test_a_model_without_padding_masks_fails_on_padding_alone():
    """Whatever the wiring check finds, padding must not move the logits of real positions:
    a model of other layers (no kt.layers to compare with) is still judged by padding."""

    def build(source_vocab_size, target_vocab_size, sizes):
        source = keras.Input(shape=(None,), dtype="int32", name="source")
        target = keras.Input(shape=(None,), dtype="int32", name="target")
        d = sizes["d_model"]
        x = keras.layers.Embedding(source_vocab_size, d)(source)
        x = keras.layers.MultiHeadAttention(2, d // 2)(x, x)
        y = keras.layers.Embedding(target_vocab_size, d)(target)
        y = keras.layers.MultiHeadAttention(2, d // 2)(y, x)
        return keras.Model(
            {"source": source, "target": target}, keras.layers.Dense(target_vocab_size)(y)
        )

    with pytest.raises(AssertionError) as info:
        exercises.check_functional_transformer(build)
    message = str(info.value)
    assert "parameters" in message  # the first check a model of other layers meets
