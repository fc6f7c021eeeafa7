"""Checkers of notebook 13's model pieces: the pre-LN encoder layer (against
`kt.layers.EncoderLayer(norm_first=True)`) and perplexity from the masked loss. Its other
checkers: `text_checks` (WordPiece, corpus BLEU) and `search_checks` (greedy and beam search).

Each names the mistake by running a plain-Python version of the step with each classic
mistake switched in."""

from __future__ import annotations

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
    reference_weights,
    run,
    shaped_output,
    student_facing,
)
from keras_transformer.course.references import (
    np_attention_mask,
    np_ffn,
    np_layer_norm,
    np_mha,
    np_token_losses,
)

# --------------------------------------------------------------------------------------------
# 2. The pre-LN encoder layer

PRE_LN_RIGHT = (
    "the pre-LN layer is h = x + MultiHead(LN1(x)) (padded keys masked), out = h + FFN(LN2(h)): "
    "each sub-layer reads the NORMALIZED input, and the residual adds the input itself"
)


def pre_ln_candidates(x, arrays, heads, padding):
    """(output, mistake) pairs: the pre-LN encoder layer in NumPy with one known mistake."""
    mha, (g1, b1), ffn, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:14], arrays[14:]
    keys = np_attention_mask(x.shape[1], padding)

    def attention(t, mask=keys):
        return np_mha(mha, heads, t, t, mask=mask)

    def feed(t):
        return np_ffn(t, *ffn)

    def ln1(t):
        return np_layer_norm(t, g1, b1)

    def ln2(t):
        return np_layer_norm(t, g2, b2)

    def post(h):
        return ln2(h + feed(h))

    def pre(h):
        return h + feed(ln2(h))

    joins = {  # how one sub-layer F with norm N joins its input t: (function, words)
        "post": (lambda t, f, n: n(t + f(t)), "post-LN, LayerNorm(x + F(x))"),
        "after": (
            lambda t, f, n: n(t) + f(n(t)),
            "the residual taken after the norm, LayerNorm(x) + F(LayerNorm(x))",
        ),
        "output": (lambda t, f, n: t + n(f(t)), "the norm on the output, x + LayerNorm(F(x))"),
        "twice": (
            lambda t, f, n: n(t + f(n(t))),
            "normalized before and after, LayerNorm(x + F(LayerNorm(x)))",
        ),
        "no_residual": (lambda t, f, n: f(n(t)), "no residual, F(LayerNorm(x))"),
        "no_norm": (lambda t, f, n: t + f(t), "no LayerNorm, x + F(x)"),
    }

    def wired(first, second):
        right = (lambda t, f, n: t + f(n(t)), "")
        a, b = joins.get(first, right)[0], joins.get(second, right)[0]
        return b(a(x, attention, ln1), feed, ln2)

    for how, (_, words) in joins.items():
        both = words.replace("F(", "Sublayer(")
        yield wired(how, how), f"both sub-layers: {both}"
    h = x + attention(ln1(x))
    yield (
        ln2(pre(h)),
        "the final LayerNorm is applied inside the layer (LN2 on the output too: "
        "LN2(h + FFN(LN2(h)))); a pre-LN layer returns h + FFN(LN2(h)), and the encoder stack "
        "applies ONE final LayerNorm after its last layer",
    )
    for how, (_, words) in joins.items():
        yield (
            wired(how, None),
            f"the self-attention sub-layer: {words.replace('F(', 'MultiHead(')}",
        )
        yield wired(None, how), f"the feed-forward sub-layer: {words.replace('F(', 'FFN(')}"
    h = x + attention(ln1(x))
    yield (
        h + feed(ln2(x)),
        "the feed-forward sub-layer reads LN2(x), the layer input; it reads LN2(h), "
        "h = x + MultiHead(LN1(x)) the self-attention sub-layer's output",
    )
    yield (
        x + feed(ln2(h)),
        "the feed-forward residual adds the layer input x; it adds h = x + MultiHead(LN1(x))",
    )
    yield (
        h + feed(ln1(h)),
        "the feed-forward sub-layer normalizes with the first LayerNorm; each sub-layer has "
        "its own (LN2, created after the feed-forward network)",
    )
    free = x + attention(ln1(x), mask=None)
    yield pre(free), "padding_mask ignored: padded keys must get weight 0 in self-attention"


@student_facing
def check_pre_ln_encoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's pre-LN encoder layer (Xiong et al., 2020; the paper's section 3.1
    with the LayerNorm moved before each sub-layer).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`;
    `layer(x, padding_mask=None)`, `x` `(batch, seq_len, d_model)`, boolean `padding_mask`
    `(batch, seq_len)` (`True` = real token), computes, without dropout,
    `h = x + MultiHead(LN1(x))` with padded keys masked, then `h + FFN(LN2(h))`, and no final
    LayerNorm (the encoder stack applies one after its last layer). Trainable weights, in
    creation order, as in `kt.layers.EncoderLayer(norm_first=True)`: self-attention (4
    kernels and 4 biases), LN1 (gamma, beta), FFN (`W1`, `b1`, `W2`, `b2`), LN2.
    Compared with `kt.layers.EncoderLayer(norm_first=True)` holding the same weights, at
    the real positions. Mistakes named: post-LN (in one or both sub-layers), the residual
    taken after the norm, the norm on the sub-layer's output, normalized before and after,
    no residual, no norm, the feed-forward sub-layer reading or adding the wrong tensor, one
    norm used twice, the final LayerNorm inside the layer, the padding mask ignored.
    """
    sec = "(pre-LN, Xiong et al. 2020)"
    rng = np.random.default_rng(21)
    layer = make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = (1.5 + 2.0 * rng.standard_normal((2, 6, d_model))).astype("float32")
    padding = np.array([[True] * 6, [True] * 4 + [False] * 2])
    run("layer(x)", layer, x)
    reference = layers.EncoderLayer(num_heads=num_heads, dff=dff, dropout=0.0, norm_first=True)
    arrays = reference_weights(reference, rng, x)
    layout = (
        "self-attention (query, key, value, output: kernel + bias each), LN1 (gamma, beta), "
        "feed-forward (W1, b1, W2, b2), LN2 (gamma, beta)"
    )
    copy_weights(layer, arrays, "the pre-LN encoder layer", layout)
    what = "layer(x, padding_mask=mask)"
    out = shaped_output(what, run(what, layer, x, padding_mask=padding), x.shape, sec)
    expected = as_array(reference(x, padding_mask=padding), "reference")
    if not np.isfinite(out[padding]).all():
        fail(
            f"{what} is NaN at real positions: fill masked scores with a large finite "
            "negative number (-1e9), not -inf"
        )
    if close_on(out, expected, padding):
        junk = x.copy()
        junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
        again = as_array(run(what, layer, junk, padding_mask=padding), what)
        if not close(again[1, :4], out[1, :4], loose=True):
            fail(f"padded positions change the real positions' outputs: mask padded keys {sec}")
        return None
    for candidate, mistake in pre_ln_candidates(x.astype("float64"), arrays, num_heads, padding):
        if close_on(out, candidate, padding):
            fail(f"pre-LN encoder layer: {mistake}; {PRE_LN_RIGHT} {sec}")
    fail(
        f"pre-LN encoder layer differs from kt.layers.EncoderLayer(norm_first=True) with the "
        f"same weights ({max_diff(out[padding], expected[padding])} at the real positions): "
        f"{PRE_LN_RIGHT} {sec}"
    )


# --------------------------------------------------------------------------------------------
# 3. Perplexity


def _perplexity_candidates(labels, logits):
    token = np_token_losses(labels, logits)  # (batch, seq_len), nats
    real = labels != 0
    mean = token[real].mean()
    per_sentence = np.array([token[i][real[i]].mean() for i in range(len(labels))])
    probs = np.clip(logits / logits.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
    as_probs = -np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])[real].mean()
    yield (
        np.exp(token.mean()),
        (
            "the padding is counted: average the cross-entropy over the tokens whose label is not 0 "
            "only, then exponentiate"
        ),
    )
    yield (
        np.exp(token[real].sum() / labels.size),
        ("divided by all positions: divide the summed cross-entropy by the number of real tokens"),
    )
    yield (
        np.exp(per_sentence).mean(),
        (
            "a mean of per-sentence perplexities: average the cross-entropy over every real token of "
            "the batch, then exponentiate once"
        ),
    )
    yield (
        np.exp(per_sentence.mean()),
        (
            "the cross-entropy averaged per sentence, then over sentences: average over every real "
            "token of the batch (a long sentence counts more)"
        ),
    )
    yield (
        np.exp(token[real]).mean(),
        (
            "exp of each token's cross-entropy, then the mean: exponentiate the MEAN cross-entropy "
            "(the geometric mean of 1/p, not the arithmetic one)"
        ),
    )
    yield (
        2.0**mean,
        (
            "2 ** (cross-entropy in nats): the loss uses the natural log, so perplexity is exp(loss); "
            "2 ** H only with H in bits"
        ),
    )
    yield (
        np.exp(mean / np.log(2.0)),
        (
            "the cross-entropy taken in bits (log base 2) and then exp: use one base throughout, "
            "exp(mean natural-log cross-entropy)"
        ),
    )
    yield mean, "the mean cross-entropy, not exponentiated: perplexity = exp(mean cross-entropy)"
    smoothed = np_token_losses(labels, logits, 0.1)[real].mean()
    yield (
        np.exp(smoothed),
        (
            "the label-smoothed loss (eps 0.1) exponentiated: perplexity uses the plain "
            "cross-entropy, -log p(label), without label smoothing"
        ),
    )
    yield np.exp(as_probs), "the logits read as probabilities: apply the softmax first"
    yield np.exp(token[real].sum()), "exp of the SUM of the cross-entropy; exp of its mean"


@student_facing
def check_perplexity(fn) -> None:
    """Checks a student's perplexity from the masked loss.

    Contract: `fn(labels, logits)`, int `labels` `(batch, seq_len)` (0 = padding), float32
    `logits` `(batch, seq_len, vocab_size)`, returns the scalar
    `exp(mean over the tokens whose label is not 0 of -log softmax(logits)[label])`
    (natural logarithm, as `MaskedSparseCategoricalCrossentropy` without label smoothing).
    Mistakes named: the padding counted, divided by all positions, a mean of per-sentence
    perplexities or of per-sentence means, exp per token then mean, 2 ** or bits, no exp,
    the label-smoothed loss,
    logits read as probabilities, a sum, padded positions' logits changing the value.
    """
    rng = np.random.default_rng(31)
    labels = np.array(
        [[5, 3, 7, 2, 9, 4, 1, 0], [4, 1, 0, 0, 0, 0, 0, 0], [6, 6, 2, 8, 0, 0, 0, 0]], "int32"
    )
    logits = (1.5 * rng.standard_normal((3, 8, 11))).astype("float32")
    what = "fn(labels, logits)"

    def call(z):
        value = as_array(run(what, fn, labels, z), what)
        if value.size != 1:
            fail(f"{what} returned shape {value.shape}; expected a scalar, the batch's perplexity")
        return float(value.reshape(()))

    got = call(logits)
    token = np_token_losses(labels, logits.astype("float64"))
    want = float(np.exp(token[labels != 0].mean()))
    if not np.isclose(got, want, rtol=1e-3):
        for candidate, mistake in _perplexity_candidates(labels, logits.astype("float64")):
            if np.isclose(got, candidate, rtol=1e-3):
                fail(f"{what} = {got:.4f}, expected {want:.4f}: {mistake}")
        fail(f"{what} = {got:.4f}; exp(mean cross-entropy over the real tokens) is {want:.4f}")
    junk = logits.copy()
    junk[labels == 0] = rng.standard_normal(junk[labels == 0].shape) * 10
    if not np.isclose(call(junk), got, rtol=1e-4):
        fail(f"the logits at padded positions change {what}; they must not count")
