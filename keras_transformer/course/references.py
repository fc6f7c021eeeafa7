"""The pieces of the Transformer in NumPy (float64), each with the mistakes a student makes.

The checkers compare a student's output with these references, and `diagnosis` with each
mistake switched in (an option of the reference: no scaling, the wrong softmax axis, a wrong
head split, pre-LN wiring...) to name the one that reproduces it.
"""

import math

import numpy as np


def _masked_scores(scores, mask, how):
    """The scores under a boolean `mask` (True = may attend), applied as `how` says: "where"
    (the right way: masked scores become -1e9), or a mistake: "plus_masked" (+1e9 added to the
    masked keys' scores, in float32), "plus_allowed" (+1e9 added to the allowed keys' scores in
    float32, where 1e9 + score rounds to 1e9), "multiply" (scores * mask: masked scores 0)."""
    if how == "multiply":
        return scores * mask
    if how in ("plus_masked", "plus_allowed"):
        big = np.where(mask, 0, 1) if how == "plus_masked" else np.where(mask, 1, 0)
        return (scores.astype("float32") + big.astype("float32") * np.float32(1e9)).astype(float)
    return np.where(mask, scores, -1e9)


def np_attention(
    q, k, v, mask=None, scale="sqrt", axis=-1, invert_mask=False, mask_as="where", empty="uniform"
):
    """softmax(q k^T * scale) v in NumPy, with the mistakes `diagnosis` names.

    `mask_as` is how the mask is applied (`_masked_scores`); `empty` what a query that may
    attend to no key reads: "uniform" (every key alike, as -1e9 masking gives) or "zero" (no
    key at all, as `kt.layers.MultiHeadAttention` gives).
    """
    d_k = q.shape[-1]
    factor = {"sqrt": 1 / np.sqrt(d_k), "none": 1.0, "d": 1 / d_k, "times_sqrt": np.sqrt(d_k)}
    factor = factor[scale] if isinstance(scale, str) else scale
    scores = q @ np.swapaxes(k, -1, -2) * factor  # (..., q_len, kv_len)
    if mask is not None:
        mask = np.logical_not(mask) if invert_mask else np.asarray(mask, bool)
        scores = _masked_scores(scores, mask, mask_as)
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    weights = weights / weights.sum(axis=axis, keepdims=True)
    if mask is not None and empty == "zero":
        weights = weights * np.any(mask, axis=-1, keepdims=True)
    return weights @ v, weights


def _split_heads(x, heads, how):
    b, length, d = x.shape
    if how == "no_transpose":  # (batch, len, d) read as (batch, heads, len, d_head)
        return x.reshape(b, heads, length, d // heads)
    if how == "strided":  # head i takes columns i, i + heads, ...
        return x.reshape(b, length, d // heads, heads).transpose(0, 3, 1, 2)
    return x.reshape(b, length, heads, d // heads).transpose(0, 2, 1, 3)


def _merge_heads(x, how):
    b, heads, length, dh = x.shape
    if how == "no_transpose":
        return x.reshape(b, length, heads * dh)
    order = (0, 2, 3, 1) if how == "strided" else (0, 2, 1, 3)
    return x.transpose(order).reshape(b, length, heads * dh)


def np_mha(weights, heads, query, value, key=None, mask=None, **variant):
    """Multi-head attention in NumPy from 2-D kernels; `variant` switches in one mistake."""
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    key = value if key is None else key
    if variant.get("swap_key_value"):
        key, value = value, key
    split = variant.get("split", "heads")
    q = _split_heads(query @ wq + bq, heads, split)  # (batch, heads, q_len, d_head)
    k = _split_heads(key @ wk + bk, heads, split)  # (batch, heads, kv_len, d_head)
    v = _split_heads(value @ wv + bv, heads, split)
    if mask is not None:
        mask = np.asarray(mask, bool)[:, None]  # (batch, 1, q_len, kv_len)
    names = ("scale", "axis", "invert_mask", "mask_as", "empty")
    options = {name: variant[name] for name in names if name in variant}
    out, _ = np_attention(q, k, v, mask, **options)
    out = _merge_heads(out, variant.get("merge", "heads"))  # (batch, q_len, d_model)
    return out if variant.get("no_output_projection") else out @ wo + bo


def np_layer_norm(x, gamma, beta, axis=-1):
    centred = x - x.mean(axis=axis, keepdims=True)
    return centred / np.sqrt(x.var(axis=axis, keepdims=True) + 1e-6) * gamma + beta


def pe_table(length, depth, mistake=None):
    """The paper's positional-encoding table, or the one a key of `diagnosis.PE_MISTAKES` names."""
    pos = np.arange(length, dtype="float64")[:, None] + (mistake == "start")  # (length, 1)
    pair = np.arange(depth // 2, dtype="float64")[None, :]  # (1, depth / 2)
    exponents = {
        "i": (pair, pair),  # the pair index without the factor 2
        "2j": (2 * 2 * pair, 2 * (2 * pair + 1)),  # 2 * column index: 4i/d and (4i + 2)/d
        "j": (2 * pair, 2 * pair + 1),  # column index: the cosine of a pair uses (2i + 1)/d
    }.get(mistake, (2 * pair, 2 * pair))
    rates = [1 / 10000 ** (exponent / depth) for exponent in exponents]
    sines, cosines = np.sin(pos * rates[0]), np.cos(pos * rates[1])
    if mistake == "concatenated":
        return np.concatenate([sines, cosines], axis=-1)
    pairs = (cosines, sines) if mistake == "swapped" else (sines, cosines)
    return np.stack(pairs, axis=-1).reshape(length, depth)  # columns sin, cos, sin, cos, ...


def _np_gelu(x):
    """GELU with erf (Keras's default); the tanh approximation is within the loose tolerance."""
    erf = np.vectorize(math.erf, otypes=[float])
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def np_ffn(x, w1, b1, w2, b2, activation="relu"):
    """The position-wise feed-forward network; `activation` "relu" (the paper), "none", "gelu"."""
    inner = x @ w1 + b1  # (batch, len, dff)
    if activation == "relu":
        inner = np.maximum(inner, 0)
    elif activation == "gelu":
        inner = _np_gelu(inner)
    return inner @ w2 + b2


# How a sub-layer F joins its input x: the paper's post-LN, LayerNorm(x + F(x)), or a mistake.
WIRINGS = ("post", "no_residual", "pre_ln", "pre_ln_norm_residual", "norm_plus", "no_norm")


def wire(how, x, f, gamma, beta):
    def norm(t):
        return np_layer_norm(t, gamma, beta)

    if how == "post":
        return norm(x + f(x))
    if how == "no_residual":
        return norm(f(x))
    if how == "pre_ln":
        return x + f(norm(x))
    if how == "pre_ln_norm_residual":  # pre-LN, but the residual adds the normalized x
        return norm(x) + f(norm(x))
    if how == "norm_plus":
        return norm(x) + f(x)
    return x + f(x)  # "no_norm"


def np_attention_mask(q_len, kv_padding, causal=False):
    mask = np.repeat(kv_padding[:, None, :], q_len, axis=1)  # (batch, q_len, kv_len)
    if causal:
        mask &= np.tril(np.ones(mask.shape[1:], bool))
    return mask


def np_token_losses(labels, logits, label_smoothing=0.0):
    log_p = logits - logits.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]
    if label_smoothing:
        nll = (1 - label_smoothing) * nll + label_smoothing * (-log_p.mean(-1))
    return nll  # (batch, seq_len)
