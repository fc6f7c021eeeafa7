"""Checkers of notebooks 04-05: Add & Norm, the feed-forward network, the encoder layer and the
decoder layer (sections 3.1 and 3.3 of the paper)."""

import numpy as np

from keras_transformer import layers
from keras_transformer.course.checking import (
    as_array,
    close,
    close_on,
    copy_weights,
    fail,
    make_layer,
    max_diff,
    positions_text,
    random_weights,
    reference_weights,
    run,
    shaped_output,
    shapes_in,
    student_facing,
)
from keras_transformer.course.diagnosis import (
    DECODER_RIGHT,
    ENCODER_RIGHT,
    NAN_CAUSE,
    decoder_candidates,
    diagnose,
    encoder_candidates,
)
from keras_transformer.course.references import np_layer_norm


@student_facing
def check_add_norm(cls, d_model: int = 8) -> None:
    """Checks a student's residual connection + layer normalization (section 3.1 of the paper).

    Contract: `cls()` is a `keras.layers.Layer`; `layer(x, sublayer_output)`, both
    `(batch, seq_len, d_model)`, returns `LayerNorm(x + sublayer_output)` (post-LN)
    over the last axis; its only trainable weights are `gamma (d_model,)`, `beta
    (d_model,)` (a `keras.layers.LayerNormalization`, epsilon up to 1e-3).
    Mistakes named: no residual, `x + LayerNorm(sublayer_output)` (the output normalized
    before the add, which is not pre-LN), `LayerNorm(x) + sublayer_output`, no
    normalization, the wrong axis.
    """
    sec = "(section 3.1 of the paper)"
    rng = np.random.default_rng(2)
    layer = make_layer(cls)
    x = (3.0 + 2.0 * rng.standard_normal((2, 5, d_model))).astype("float32")
    sub = (-1.0 + 0.5 * rng.standard_normal((2, 5, d_model))).astype("float32")
    what = "layer(x, sublayer_output)"
    run(what, layer, x, sub)
    if not layer.trainable_weights:
        out = as_array(run(what, layer, x, sub), what)
        if close(out, x + sub):
            fail(
                f"{what}: no normalization: LayerNorm(x + sublayer_output) normalizes each position over d_model {sec}"
            )
        fail(
            f"{what}: the layer has no learned scale gamma and offset beta; use keras.layers.LayerNormalization {sec}"
        )
    gamma = (1.0 + 0.2 * rng.standard_normal(d_model)).astype("float32")
    beta = (0.1 * rng.standard_normal(d_model)).astype("float32")
    copy_weights(layer, [gamma, beta], "the layer", "the layer normalization's gamma and beta")
    out = shaped_output(what, run(what, layer, x, sub), x.shape, sec)
    reference = layers.AddNorm()
    reference(x, sub)
    copy_weights(reference, [gamma, beta], "reference", "gamma, beta")
    expected = as_array(reference(x, sub), "reference")
    if np.allclose(out, expected, rtol=1e-2, atol=2e-3):
        return None
    ln = np_layer_norm
    for candidate, mistake in (
        (
            ln(sub, gamma, beta),
            "no residual: normalize x + sublayer_output, not sublayer_output alone",
        ),
        (
            x + ln(sub, gamma, beta),
            "x + LayerNorm(sublayer_output): the sub-layer's output is normalized before the "
            "residual add. This is not pre-LN (pre-LN normalizes the sub-layer's *input*, "
            "x + Sublayer(LayerNorm(x))); the paper's post-LN adds first, then normalizes the "
            "sum: LayerNorm(x + sublayer_output)",
        ),
        (ln(x, gamma, beta) + sub, "LayerNorm(x) + sublayer_output: add first, then normalize"),
        (
            (x + sub) * gamma + beta,
            "no normalization: LayerNorm(x + sublayer_output) normalizes each position over d_model",
        ),
        (
            x + sub,
            "no normalization: LayerNorm(x + sublayer_output) normalizes each position over d_model",
        ),
        (
            ln(x + sub, gamma, beta, axis=1),
            "normalized over the sequence axis; layer normalization is over the last axis, d_model",
        ),
    ):
        if np.allclose(out, candidate, rtol=1e-2, atol=2e-3):
            fail(f"{what}: {mistake} {sec}")
    fail(f"{what} differs from LayerNorm(x + sublayer_output) ({max_diff(out, expected)}) {sec}")


@student_facing
def check_feed_forward(cls, d_model: int = 8, dff: int = 24) -> None:
    """Checks a student's position-wise feed-forward network (section 3.3 of the paper).

    Contract: `cls(d_model=..., dff=...)` is a `keras.layers.Layer`; `layer(x)`,
    `(batch, seq_len, d_model)`, returns `max(0, x W1 + b1) W2 + b2`, without the
    Add & Norm. Trainable weights, in creation order: `W1 (d_model, dff)`,
    `b1 (dff,)`, `W2 (dff, d_model)`, `b2 (d_model,)`. Mistakes named: no ReLU,
    ReLU on the output, GELU, a residual, mixed positions.
    """
    sec = "(section 3.3 of the paper)"
    rng = np.random.default_rng(3)
    layer = make_layer(cls, d_model=d_model, dff=dff)
    x = rng.standard_normal((2, 5, d_model)).astype("float32")
    run("layer(x)", layer, x)
    w1, b1, w2, b2 = random_weights(rng, [(d_model, dff), (dff,), (dff, d_model), (d_model,)])
    b1 = b1 * 5  # a bias large enough for ReLU and GELU to differ
    layout = "W1 (d_model, dff), b1 (dff,), W2 (dff, d_model), b2"
    copy_weights(layer, [w1, b1, w2, b2], "the layer", layout)
    out = shaped_output("layer(x)", run("layer(x)", layer, x), x.shape, sec)
    inner = x @ w1 + b1
    expected = np.maximum(inner, 0) @ w2 + b2
    if close(out, expected):
        x_other = x.copy()
        x_other[:, 1:] = rng.standard_normal(x_other[:, 1:].shape)
        if not close(as_array(run("layer(x)", layer, x_other), "layer(x)")[:, 0], out[:, 0]):
            fail(
                f"the output at one position depends on the other positions; FFN is position-wise {sec}"
            )
        return None
    gelu = 0.5 * inner * (1 + np.tanh(np.sqrt(2 / np.pi) * (inner + 0.044715 * inner**3)))
    for candidate, mistake in (
        (inner @ w2 + b2, "no ReLU between the two linear maps"),
        (np.maximum(expected, 0), "ReLU also applied to the output; only the inner layer has it"),
        (gelu @ w2 + b2, "GELU instead of the paper's ReLU"),
        (
            x + expected,
            "a residual is added; the feed-forward network is FFN(x) alone (Add & Norm comes next)",
        ),
    ):
        if np.allclose(out, candidate, rtol=1e-2, atol=1e-3):
            fail(f"layer(x): {mistake} {sec}")
    fail(f"layer(x) differs from max(0, x W1 + b1) W2 + b2 ({max_diff(out, expected)}) {sec}")


@student_facing
def check_encoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's encoder layer (section 3.1 of the paper).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`;
    `layer(x, padding_mask=None)`, `x` `(batch, seq_len, d_model)`, boolean
    `padding_mask` `(batch, seq_len)` (`True` = real token), computes, post-LN and
    without dropout, `h = LayerNorm(x + MultiHead(x, x, x))` with padded keys
    masked, then `LayerNorm(h + FFN(h))`. Trainable weights, in creation order, as
    in `kt.layers.EncoderLayer`: self-attention (4 kernels and 4 biases), LayerNorm,
    FFN (`W1`, `b1`, `W2`, `b2`), LayerNorm; filled row-major into any shape.
    The outputs at real positions must match; padded positions may hold any finite
    value (masking padded queries too is fine), never NaN.
    Mistakes named, each by comparing the output with the layer computed in NumPy
    with that mistake: either residual missing, pre-LN (`x + Sublayer(LayerNorm(x))`),
    pre-LN with the residual taken after the norm (`LayerNorm(x) + Sublayer(LayerNorm(x))`),
    `LayerNorm(x) + Sublayer(x)` or no norm in either sub-layer, the padding mask inverted, the feed-forward residual or input taken from
    the wrong tensor, the padding mask on the query axis or ignored, a causal mask,
    no activation or GELU, NaN from `-inf` in a fully masked row; then padded
    positions changing the output and attention that is not global.
    """
    sec = "(section 3.1 of the paper)"
    rng = np.random.default_rng(4)
    layer = make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = rng.standard_normal((2, 6, d_model)).astype("float32")
    padding = np.array([[True] * 6, [True] * 4 + [False] * 2])
    run("layer(x)", layer, x)
    reference = layers.EncoderLayer(num_heads=num_heads, dff=dff, dropout=0.0)
    arrays = reference_weights(reference, rng, x)
    layout = (
        "self-attention (query, key, value, output: kernel + bias each), its LayerNorm "
        "(gamma, beta), feed-forward (W1, b1, W2, b2), its LayerNorm (gamma, beta)"
    )
    copy_weights(layer, arrays, "the encoder layer", layout)

    def call(inputs, mask, what="layer(x, padding_mask=mask)"):
        return shaped_output(what, run(what, layer, inputs, padding_mask=mask), inputs.shape, sec)

    out = call(x, padding)
    expected = as_array(reference(x, padding_mask=padding), "reference")

    def candidates():
        return encoder_candidates(x.astype("float64"), arrays, num_heads, padding)

    broken = ~np.isfinite(out).all(-1)  # (batch, seq_len)
    if broken.any():
        where = positions_text(broken)
        if not (broken & padding).any():
            cause = (
                "only padded positions: their attention rows are fully masked (the padding mask "
                "hides padded queries, on the query axis or on both axes), and "
                f"{NAN_CAUSE}. A NaN at a padded position reaches every position in the next "
                "layer (0 * NaN = NaN)"
            )
        else:
            cause = f"a fully masked attention row? {NAN_CAUSE}"
        also = (
            diagnose(out, candidates(), padding)
            if not close_on(out, expected, padding & ~broken)
            else None
        )
        also = f"; at the other positions: {also}" if also else ""
        fail(f"encoder layer: the output is NaN at {where}: {cause}{also} {sec}")
    if not close_on(out, expected, padding):
        mistake = diagnose(out, candidates(), padding)
        if mistake:
            named = "of the paper)" in mistake  # the section of the mistake, already said
            fail(f"encoder layer: {mistake}" + ("" if named else f" {sec}"))
        fail(
            f"encoder layer differs from kt.layers.EncoderLayer with the same weights "
            f"({max_diff(out[padding], expected[padding])} at the real positions): "
            f"{ENCODER_RIGHT} {sec}"
        )
    # padding invariance: the second row again, its two pads replaced by junk
    junk = x.copy()
    junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
    if not close(call(junk, padding)[1, :4], out[1, :4]):
        fail(
            "padded positions change the real positions' outputs: mask padded keys (section 3.2.3 of the paper)"
        )
    # global: the last real position influences the first one
    later = x.copy()
    later[0, 5] = rng.standard_normal(d_model) * 3
    if close(call(later, padding)[0, 0], out[0, 0]):
        fail(
            "the first position does not see the last: encoder self-attention is global (section 3.2.3 of the paper)"
        )


def _decoder_shape_mistake(message, tgt_len, src_len, d_model):
    """The decoder mistake a shape error shows, when the source length met the target's."""
    shapes = shapes_in(message)
    streams = {shape[1:] for shape in shapes if len(shape) == 3 and shape[-1] == d_model}
    if {(tgt_len, d_model), (src_len, d_model)} <= streams:
        return (
            "the cross-attention sub-layer puts the source length into the target stream: its "
            f"output has one row per query, so with the queries taken from the encoder output "
            f"(context, src_len={src_len}) it is (batch, {src_len}, {d_model}) and cannot be "
            f"added to the decoder's residual (batch, {tgt_len}, {d_model}). The queries come "
            "from the decoder, h1 = LayerNorm(x + SelfAttention(x)), the keys and values from "
            "the encoder output, and the residual adds h1: "
            "LayerNorm(h1 + CrossAttention(h1, context)) (section 3.2.3 of the paper)"
        )
    masks = [s for s in shapes if len(s) >= 3 and s[-1] == tgt_len and s[-2] == tgt_len]
    scores = [s for s in shapes if len(s) >= 3 and s[-1] == src_len and s[-2] == tgt_len]
    if masks and scores:
        return (
            f"the cross-attention mask is (..., {tgt_len}, {tgt_len}), built from the target's "
            f"padding_mask, but cross-attention's scores are (..., tgt_len={tgt_len}, "
            f"src_len={src_len}): its mask hides the padded *source* keys, so build it from "
            "context_padding_mask (batch, src_len): (batch, 1, src_len) broadcast over the "
            "target queries (section 3.2.3 of the paper)"
        )
    return None


@student_facing
def check_decoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's decoder layer (section 3.1 of the paper, attention uses of section 3.2.3).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`;
    `layer(x, context, padding_mask=None, context_padding_mask=None)`, `x`
    `(batch, tgt_len, d_model)`, `context` the encoder output, boolean masks
    `(batch, tgt_len)`, `(batch, src_len)` (`True` = real token), computes post-LN
    `h1 = LayerNorm(x + SelfAttention(x))` (causal: position t reads positions <= t),
    `h2 = LayerNorm(h1 + CrossAttention(h1, context))` (queries from h1, keys and
    values from the context, padded source keys masked), `LayerNorm(h2 + FFN(h2))`.
    Trainable weights, in creation order, as in `kt.layers.DecoderLayer`:
    self-attention (4 kernels, 4 biases), LayerNorm, cross-attention, LayerNorm,
    FFN, LayerNorm.
    Mistakes named, each by comparing the output with the layer computed in NumPy
    with that mistake: not causal, the causal diagonal hidden or the triangle turned
    around, cross- before self-attention, cross-attention queries (or queries and
    residual) from the layer input x, keys and values not from the context, any
    residual missing, pre-LN, pre-LN with the residual after the norm,
    `LayerNorm(x) + Sublayer(x)` or no norm in any
    sub-layer, a residual or the feed-forward input from the wrong tensor, context
    padding ignored, no activation or GELU, NaN from `-inf` in a fully masked row;
    then the context unused and padded source positions changing the output. A fully
    masked row may read every key alike (-1e9 masking) or nothing
    (`kt.layers.MultiHeadAttention`): both are recognised. Shape errors of two mistakes are
    named: cross-attention queries from the encoder output, a cross-attention mask built
    from the target's padding.
    """
    sec = "(section 3.2.3 of the paper)"
    rng = np.random.default_rng(5)
    layer = make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = rng.standard_normal((2, 4, d_model)).astype("float32")
    context = rng.standard_normal((2, 6, d_model)).astype("float32")
    tgt_pad = np.ones((2, 4), bool)
    src_pad = np.array([[True] * 6, [True] * 4 + [False] * 2])

    def run_layer(what, *args, **kwargs):  # a shape error of a known mistake is named
        try:
            return run(what, layer, *args, **kwargs)
        except AssertionError as error:
            mistake = _decoder_shape_mistake(str(error), x.shape[1], context.shape[1], d_model)
            fail(f"decoder layer: {mistake}" if mistake else str(error))

    run_layer("layer(x, context)", x, context)
    reference = layers.DecoderLayer(num_heads=num_heads, dff=dff, dropout=0.0)
    arrays = reference_weights(reference, rng, x, context)
    layout = (
        "causal self-attention (query, key, value, output: kernel + bias each), its LayerNorm, "
        "cross-attention (the same 8 arrays), its LayerNorm, feed-forward (W1, b1, W2, b2), its LayerNorm"
    )
    copy_weights(layer, arrays, "the decoder layer", layout)

    def call(inputs, ctx, what="layer(x, context, padding_mask, context_padding_mask)"):
        out = run_layer(what, inputs, ctx, padding_mask=tgt_pad, context_padding_mask=src_pad)
        return shaped_output(what, out, inputs.shape, sec, "(batch, tgt_len, d_model) = ")

    out = call(x, context)
    expected = reference(x, context, padding_mask=tgt_pad, context_padding_mask=src_pad)
    expected = as_array(expected, "reference")

    def candidates():
        return decoder_candidates(
            x.astype("float64"), context.astype("float64"), arrays, num_heads, src_pad
        )

    broken = ~np.isfinite(out).all(-1)  # (batch, tgt_len)
    if broken.any():
        where = positions_text(broken)
        if broken[:, 0].all() and not broken[:, 1:].any():
            cause = (
                "the first position sees nothing: the causal mask hides the diagonal "
                "(np.tril(ones, -1), k < t), and -inf in a fully masked row makes its softmax "
                "0/0; position t must see itself, positions k <= t (np.tril(ones))"
            )
        else:
            cause = f"a fully masked attention row? {NAN_CAUSE}"
        also = diagnose(out, candidates(), tgt_pad)
        also = f"; at the other positions: {also}" if also else ""
        fail(f"decoder layer: the output is NaN at {where}: {cause}{also} {sec}")
    if not close(out, expected, loose=True):
        mistake = diagnose(out, candidates(), tgt_pad)
        if mistake:
            named = "of the paper)" in mistake  # the section of the mistake, already said
            fail(f"decoder layer: {mistake}" + ("" if named else f" {sec}"))
        later = x.copy()
        later[:, -1] = rng.standard_normal((2, d_model)) * 5
        if not close(call(later, context)[:, :-1], out[:, :-1]):
            fail(
                "not causal: changing the last target position changes earlier outputs; "
                f"mask the decoder self-attention so position t sees only positions <= t {sec}"
            )
        fail(
            f"decoder layer differs from kt.layers.DecoderLayer with the same weights "
            f"({max_diff(out, expected)}): {DECODER_RIGHT} {sec}"
        )
    other = context.copy()
    other[:, 0] = rng.standard_normal((2, d_model)) * 3
    if close(call(x, other), out):
        fail(
            f"the output does not depend on the context: cross-attention must read the encoder output {sec}"
        )
    junk = context.copy()
    junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
    if not close(call(x, junk)[1], out[1]):
        fail(f"padded source positions change the output: mask them in cross-attention {sec}")
