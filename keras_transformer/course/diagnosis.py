"""Naming a student's mistake: each known mistake's words, and the search for the one whose
NumPy version (`references` with that mistake switched in) reproduces the student's output."""

import itertools

import keras
import numpy as np

from keras_transformer.course.checking import close, close_on
from keras_transformer.course.references import (
    WIRINGS,
    np_attention_mask,
    np_ffn,
    np_layer_norm,
    np_mha,
    wire,
)

PE_MISTAKES = {
    "concatenated": "concatenated layout: all sines, then all cosines; the paper interleaves "
    "them, PE[pos, 2i] = sin(...) and PE[pos, 2i+1] = cos(...)",
    "swapped": "sine and cosine swapped: even columns 2i hold the sine, odd columns 2i+1 the "
    "cosine",
    "i": "wrong exponent: pos / 10000^(i/d) with i the pair index; the paper uses 2i/d",
    "2j": "wrong exponent: 2j/d with j the column index; use 2i/d with i the pair index "
    "(columns 2i and 2i+1 share one frequency)",
    "j": "wrong exponent: the cosine column 2i+1 uses (2i+1)/d; the sine and the cosine of a "
    "pair share the frequency 1 / 10000^(2i/d)",
    "start": "positions start at 1; the first position is pos = 0",
}


MASK_PLUS_MASKED = (
    "an additive mask with the wrong sign: +1e9 is added to the scores of the keys where the "
    "mask is False, so those keys share all the weight and the allowed keys get none; add a "
    "large *negative* number to the masked keys, scores + (1 - mask) * -1e9, or "
    "where(mask, scores, -1e9)"
)
MASK_PLUS_ALLOWED = (
    "an additive mask with +1e9 on the allowed keys: in float32 (about 7 digits) 1e9 + score "
    "rounds to 1e9, so every allowed key gets the same weight and the scores are lost; leave "
    "the allowed keys' scores as they are and add -1e9 to the masked keys only, "
    "where(mask, scores, -1e9)"
)
MASK_MULTIPLIED = (
    "the scores are multiplied by the mask (scores * mask): a masked key's score becomes 0, "
    "not a large negative number, and still gets weight exp(0) / sum(...) after the softmax; "
    "set the masked scores to -1e9 instead, where(mask, scores, -1e9)"
)


def mha_mistake(student, weights, heads, query, value, key=None, attention_mask=None):
    """Names the mistake whose NumPy version reproduces the student's output, or `None`."""
    mask = attention_mask
    d_head = query.shape[-1] // heads
    no_transpose = (
        "wrong head split: (batch, len, d_model) reshaped straight to (batch, heads, len, "
        "d_head); reshape to (batch, len, heads, d_head), then transpose (section 3.2.2 of the paper)"
    )
    strided = (
        "wrong head split: head i takes every num_heads-th column; it takes the block "
        "i*d_head:(i+1)*d_head (section 3.2.2 of the paper)"
    )
    mistakes = {  # (option, value, ...) of np_mha -> the mistake it reproduces
        (
            "scale",
            "none",
        ): "the scores are not scaled by 1/sqrt(d_head) (section 3.2.1 of the paper)",
        (
            "scale",
            "d",
        ): "the scores are divided by d_head; divide by sqrt(d_head) (section 3.2.1 of the paper)",
        ("scale", 1 / np.sqrt(query.shape[-1])): "the scores are divided by sqrt(d_model); each "
        f"head scales by sqrt(d_k) with d_k = d_model / num_heads = {d_head} (section 3.2.2 of the paper)",
        ("axis", -2): "weights do not sum to 1 over the keys: softmax over the queries instead "
        "of the keys (section 3.2.1 of the paper)",
        ("invert_mask", True): "mask polarity inverted: attention_mask True means 'may attend' "
        "(or an additive mask with the wrong sign: +1e9 where -1e9 belongs), so the keys where "
        "it is False get all the weight; hide them: keras.ops.where(mask, scores, -1e9) "
        "(section 3.2.3 of the paper)",
        ("mask_as", "plus_masked"): f"{MASK_PLUS_MASKED} (section 3.2.3 of the paper)",
        ("mask_as", "plus_allowed"): f"{MASK_PLUS_ALLOWED} (section 3.2.3 of the paper)",
        ("mask_as", "multiply"): f"{MASK_MULTIPLIED} (section 3.2.3 of the paper)",
        ("split", "no_transpose"): no_transpose,
        ("split", "no_transpose", "merge", "no_transpose"): no_transpose,
        ("split", "strided"): strided,
        ("split", "strided", "merge", "strided"): strided,
        ("merge", "no_transpose"): "wrong head merge: transpose (batch, heads, len, d_head) back "
        "to (batch, len, heads, d_head) before reshaping to (batch, len, d_model) (section 3.2.2 of the paper)",
        ("swap_key_value", True): "key and value swapped: the call is layer(query, value, "
        "key=None), key defaults to value (section 3.2.2 of the paper)",
        ("no_output_projection", True): "the output projection W^O is not applied to the "
        "concatenated heads (section 3.2.2 of the paper)",
    }
    for options, mistake in mistakes.items():
        if options[0] in ("invert_mask", "mask_as") and mask is None:
            continue
        variant = dict(zip(options[::2], options[1::2], strict=True))
        if close(student, np_mha(weights, heads, query, value, key, mask, **variant)):
            return mistake
    if mask is not None and close(student, np_mha(weights, heads, query, value, key)):
        return "attention_mask is ignored: keys where it is False must get weight 0 (section 3.2.3 of the paper)"
    return None


_WIRING_TEXT = {  # how: (the mistake, what the sub-layer computes then)
    "no_residual": ("residual missing", "LayerNorm({sub}(x))"),
    "pre_ln": ("pre-LN", "x + {sub}(LayerNorm(x)), the norm before the sub-layer"),
    "pre_ln_norm_residual": (
        "pre-LN with the residual taken after the norm",
        "LayerNorm(x) + {sub}(LayerNorm(x)): the residual adds the normalized x (pre-LN adds x "
        "itself, x + {sub}(LayerNorm(x)))",
    ),
    "norm_plus": ("LayerNorm(x) + {sub}(x)", "the input normalized, then added"),
    "no_norm": ("no LayerNorm after the residual add", "x + {sub}(x)"),
}


def _wiring_mistake(how, name, sub):
    """What `wire(how, ...)` does wrong, for the sub-layer `name` computing `sub`(x)."""
    mistake, computed = _WIRING_TEXT[how]
    return (
        f"{name}: {mistake.format(sub=sub)}, {computed.format(sub=sub)}; the paper's "
        f"sub-layer (post-LN) is LayerNorm(x + {sub}(x)), x being the sub-layer's input: add "
        "the residual, then normalize the sum"
    )


def _wiring_candidates(build, sublayers):
    """(output, message) for every way of joining the sub-layers but the paper's.

    `build(wirings)` computes the layer with one wiring per sub-layer; `sublayers` holds
    `(name, sub)` per sub-layer. One sub-layer wrong comes first, then all wrong the same way,
    then every other mix.
    """
    count = len(sublayers)
    correct = ("post",) * count
    single = [correct[:i] + (how,) + correct[i + 1 :] for i in range(count) for how in WIRINGS[1:]]
    same = [(how,) * count for how in WIRINGS[1:]]
    rest = [w for w in itertools.product(WIRINGS, repeat=count) if w != correct]
    seen = set()
    for wirings in single + same + rest:
        if wirings in seen:
            continue
        seen.add(wirings)
        if len(set(wirings)) == 1:
            names = ", ".join(name.removesuffix(" sub-layer") for name, _ in sublayers)
            message = _wiring_mistake(wirings[0], f"every sub-layer ({names})", "Sublayer")
        else:
            message = "; ".join(
                _wiring_mistake(how, name, sub)
                for how, (name, sub) in zip(wirings, sublayers, strict=True)
                if how != "post"
            )
        yield build(wirings), message


def _activation_candidates(layer):
    """(output, mistake) pairs of the feed-forward activation: `layer(activation=...)` computes
    the whole layer in NumPy with that activation."""
    yield (
        layer(activation="none"),
        "no ReLU in the feed-forward network: FFN(h) = max(0, h W1 + b1) W2 + b2 "
        "(section 3.3 of the paper)",
    )
    yield (
        layer(activation="gelu"),
        "GELU in the feed-forward network; the paper's is ReLU, FFN(h) = max(0, h W1 + b1) W2 "
        "+ b2 (section 3.3 of the paper)",
    )


def diagnose(out, candidates, real):
    """The message of the first candidate equal to `out` at every position, else of the first
    equal to it at the real positions where `out` is finite (padded positions may differ)."""
    candidates = list(candidates)
    for candidate, message in candidates:
        if close(out, candidate, loose=True):
            return message
    rows = real & np.isfinite(out).all(-1)
    for candidate, message in candidates:
        if close_on(out, candidate, rows):
            return message
    return None


NAN_CAUSE = (
    "filling masked scores with -inf makes a fully masked row's softmax 0/0; fill with a large "
    "finite negative number (-1e9) or mask only the keys"
)


ENCODER_RIGHT = (
    "the paper's layer is h = LayerNorm(x + MultiHead(x, x, x)) with padded keys masked, "
    "out = LayerNorm(h + FFN(h)), FFN(h) = max(0, h W1 + b1) W2 + b2"
)


def encoder_candidates(x, arrays, heads, padding):
    """(output, mistake) pairs: the encoder layer computed in NumPy with one known mistake."""
    mha, (g1, b1), ffn, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:14], arrays[14:]
    length = x.shape[1]
    keys = np_attention_mask(length, padding)  # the paper: padded keys hidden from every query

    def attention(mask):
        return lambda t: np_mha(mha, heads, t, t, mask=mask)

    def feed(activation="relu"):
        return lambda t: np_ffn(t, *ffn, activation)

    def encoder(mask=keys, activation="relu"):
        h = wire("post", x, attention(mask), g1, b1)
        return wire("post", h, feed(activation), g2, b2)

    sec = "(section 3.2.3 of the paper)"
    queries = np.repeat(padding[:, :, None], length, axis=2)  # padding[b, q] for every key
    yield (
        encoder(queries),
        "the padding mask is applied on the query axis, mask[b, q, k] = padding_mask[b, q], so "
        "real positions still read the padded keys; hide the padded keys: mask[b, q, k] = "
        f"padding_mask[b, k], shape (batch, 1, seq_len) broadcast over the queries {sec}",
    )
    yield (
        encoder(None),
        f"padding_mask ignored: padded keys must get weight 0 in self-attention {sec}",
    )
    inverted = np_attention_mask(length, ~padding)  # only the padded keys may be read
    for empty in ("uniform", "zero"):  # what a query with no key reads: -1e9 masking, or kt's
        h = wire(
            "post", x, lambda t, e=empty: np_mha(mha, heads, t, t, mask=inverted, empty=e), g1, b1
        )
        yield (
            wire("post", h, feed(), g2, b2),
            "padding mask inverted: padding_mask is True on the real tokens, so the real keys "
            "are hidden and only the padded ones are read; hide the keys where padding_mask is "
            f"False {sec}",
        )
    yield (
        encoder(keys & np.tril(np.ones((length, length), bool))),
        f"a causal mask in the encoder: encoder self-attention sees every real position {sec}",
    )

    def wired(wirings):
        h = wire(wirings[0], x, attention(keys), g1, b1)
        return wire(wirings[1], h, feed(), g2, b2)

    yield from _wiring_candidates(
        wired, [("self-attention sub-layer", "MultiHead"), ("feed-forward sub-layer", "FFN")]
    )
    h = wire("post", x, attention(keys), g1, b1)
    a = attention(keys)(x)
    yield (
        np_layer_norm(x + feed()(h), g2, b2),
        "the feed-forward residual adds the layer input x; it adds the feed-forward "
        "sub-layer's own input h = LayerNorm(x + MultiHead(x, x, x)): LayerNorm(h + FFN(h))",
    )
    yield (
        np_layer_norm(x + a + feed()(h), g2, b2),
        "the feed-forward residual adds x + MultiHead(x, x, x), the sum before the first "
        "LayerNorm; it adds the normalized h = LayerNorm(x + MultiHead(x, x, x)): "
        "LayerNorm(h + FFN(h))",
    )
    yield (
        np_layer_norm(h + feed()(x), g2, b2),
        "the feed-forward network reads the layer input x; it reads the self-attention "
        "sub-layer's output h = LayerNorm(x + MultiHead(x, x, x)): LayerNorm(h + FFN(h))",
    )
    yield from _activation_candidates(encoder)


DECODER_RIGHT = (
    "the paper's layer is h1 = LayerNorm(x + SelfAttention(x) under the causal mask, position t "
    "reading positions <= t), h2 = LayerNorm(h1 + CrossAttention(queries from h1, keys and "
    "values from the context, padded source keys masked)), out = LayerNorm(h2 + FFN(h2)), "
    "FFN(h) = max(0, h W1 + b1) W2 + b2"
)


def decoder_candidates(x, context, arrays, heads, src_pad):
    """(output, mistake) pairs: the decoder layer computed in NumPy with one known mistake."""
    self_w, (g1, b1), cross_w, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:18], arrays[18:20]
    ffn, (g3, b3) = arrays[20:24], arrays[24:]
    t = x.shape[1]
    lower = np.tril(np.ones((t, t), bool))
    causal = np.broadcast_to(lower, (x.shape[0], t, t))
    cross_mask = np_attention_mask(t, src_pad)

    def self_attention(mask=causal, empty="uniform"):
        return lambda q: np_mha(self_w, heads, q, q, mask=mask, empty=empty)

    def cross_attention(mask=cross_mask, kv=context):
        return lambda q: np_mha(cross_w, heads, q, q if kv is None else kv, mask=mask)

    def feed(activation="relu"):
        return lambda h: np_ffn(h, *ffn, activation)

    def decoder(
        self_mask=causal,
        cmask=cross_mask,
        activation="relu",
        wirings=("post",) * 3,
        empty="uniform",
    ):
        h1 = wire(wirings[0], x, self_attention(self_mask, empty), g1, b1)
        h2 = wire(wirings[1], h1, cross_attention(cmask), g2, b2)
        return wire(wirings[2], h2, feed(activation), g3, b3)

    def ln(value, gamma, beta):
        return np_layer_norm(value, gamma, beta)

    yield (
        decoder(self_mask=np.ones_like(causal)),
        "not causal: the decoder's self-attention sees later target positions; mask it so "
        "position t sees only positions <= t (np.tril)",
    )
    for empty in ("uniform", "zero"):  # the first row: -1e9 masking, or kt's MultiHeadAttention
        yield (
            decoder(self_mask=causal & ~np.eye(t, dtype=bool), empty=empty),
            "the causal mask also hides the diagonal: position t must see itself, positions "
            "k <= t (np.tril(ones), not np.tril(ones, -1) or k < t); with the diagonal hidden "
            "the first position sees nothing",
        )
    yield (
        decoder(self_mask=np.broadcast_to(lower.T, causal.shape)),
        "the causal mask is turned around: position t sees itself and the later positions "
        "(np.triu); it must see itself and the earlier ones (np.tril)",
    )
    h1 = wire("post", x, self_attention(), g1, b1)
    for first, second in ((self_w, cross_w), (cross_w, self_w)):  # either attention's weights
        h = wire(
            "post", x, lambda q, w=first: np_mha(w, heads, q, context, mask=cross_mask), g1, b1
        )
        h = wire("post", h, lambda q, w=second: np_mha(w, heads, q, q, mask=causal), g2, b2)
        yield (
            wire("post", h, feed(), g3, b3),
            "cross-attention before self-attention: the decoder layer runs causal "
            "self-attention, then cross-attention, then the feed-forward network",
        )
    yield (
        decoder(cmask=None),
        "context_padding_mask ignored: padded source positions must get weight 0 in "
        "cross-attention",
    )
    yield (
        wire("post", ln(h1 + cross_attention()(x), g2, b2), feed(), g3, b3),
        "cross-attention takes its queries from the layer input x; they come from the causal "
        "self-attention sub-layer's output h1 = LayerNorm(x + SelfAttention(x)): "
        "LayerNorm(h1 + CrossAttention(h1, context))",
    )
    yield (
        wire("post", ln(x + cross_attention()(x), g2, b2), feed(), g3, b3),
        "the cross-attention sub-layer reads the layer input x (queries and residual), so the "
        "self-attention output h1 = LayerNorm(x + SelfAttention(x)) is never used; it is "
        "LayerNorm(h1 + CrossAttention(h1, context))",
    )
    yield (
        wire("post", ln(x + cross_attention()(h1), g2, b2), feed(), g3, b3),
        "the cross-attention residual adds the layer input x; it adds the sub-layer's own "
        "input h1 = LayerNorm(x + SelfAttention(x)): LayerNorm(h1 + CrossAttention(h1, context))",
    )
    yield (
        wire("post", ln(h1 + cross_attention(None, kv=None)(h1), g2, b2), feed(), g3, b3),
        "cross-attention reads its keys and values from the decoder (h1), not from the "
        "encoder output `context`",
    )
    yield from _wiring_candidates(
        lambda wirings: decoder(wirings=wirings),
        [
            ("causal self-attention sub-layer", "SelfAttention"),
            ("cross-attention sub-layer", "CrossAttention"),
            ("feed-forward sub-layer", "FFN"),
        ],
    )
    h2 = wire("post", h1, cross_attention(), g2, b2)
    for residual, name in ((x, "the layer input x"), (h1, "h1, the self-attention output")):
        yield (
            ln(residual + feed()(h2), g3, b3),
            f"the feed-forward residual adds {name}; it adds the feed-forward sub-layer's own "
            "input h2 = LayerNorm(h1 + CrossAttention(h1, context)): LayerNorm(h2 + FFN(h2))",
        )
    for source, name in ((x, "the layer input x"), (h1, "h1, the self-attention output")):
        yield (
            ln(h2 + feed()(source), g3, b3),
            f"the feed-forward network reads {name}; it reads the cross-attention sub-layer's "
            "output h2: LayerNorm(h2 + FFN(h2))",
        )
    yield from _activation_candidates(decoder)


def _plain(x):
    """A layer's output as a NumPy array: no Keras mask travels to the next call."""
    return np.asarray(keras.ops.convert_to_numpy(x))


def wired_logits(parts, source, target, variant=None):
    """The logits of the student's own layers wired as the paper does, or with one mistake."""
    source_embedding, target_embedding, encoders, decoders, head = parts
    source_mask, target_mask = source != 0, target != 0
    x, outputs = _plain(source_embedding(source)), []
    for layer in encoders:
        if variant in ("no_masks", "encoder_unmasked"):
            x = _plain(layer(x))
        else:
            x = _plain(layer(x, padding_mask=source_mask))
        outputs.append(x)
    y = _plain(target_embedding(target))
    for i, layer in enumerate(decoders):
        context = outputs[i] if variant == "context_per_layer" else x
        if variant in ("no_masks", "cross_unmasked"):
            y = _plain(layer(y, context, padding_mask=target_mask))
        else:
            kwargs = {"padding_mask": target_mask, "context_padding_mask": source_mask}
            y = _plain(layer(y, context, **kwargs))
    logits = _plain(head(y)).astype("float64")
    if variant == "softmax":
        logits = np.exp(logits - logits.max(-1, keepdims=True))
        logits = logits / logits.sum(-1, keepdims=True)
    return logits


FUNCTIONAL_MISTAKES = {
    "no_masks": "no padding masks reach the attention layers: the encoder layers get no "
    "padding_mask and the decoder layers no context_padding_mask, so padded source "
    "positions are read; derive the masks from the ids, source_mask = "
    "kt.layers.PaddingMask()(source), and pass them explicitly",
    "encoder_unmasked": "the encoder layers get no padding_mask, so encoder self-attention "
    "reads the padded source positions; pass padding_mask=source_mask to every encoder layer",
    "cross_unmasked": "the decoder layers get no context_padding_mask, so cross-attention "
    "reads the padded source positions; pass context_padding_mask=source_mask to every "
    "decoder layer",
    "context_per_layer": "decoder layer i reads encoder layer i's output; every decoder "
    "layer reads the output of the last encoder layer (the encoder's output)",
    "softmax": "the model outputs probabilities (a softmax after the last Dense); it outputs "
    "the logits, and the loss applies the softmax (from_logits=True)",
}
