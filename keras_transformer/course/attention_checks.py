"""Checkers of notebooks 01-03: scaled dot-product attention, the positional encoding and
multi-head attention (sections 3.2.1, 3.5 and 3.2.2 of the paper)."""

import numpy as np

from keras_transformer import layers
from keras_transformer.course.checking import (
    as_array,
    close,
    copy_weights,
    fail,
    make_layer,
    max_diff,
    random_weights,
    run,
    shaped_output,
    student_facing,
)
from keras_transformer.course.diagnosis import (
    MASK_MULTIPLIED,
    MASK_PLUS_ALLOWED,
    MASK_PLUS_MASKED,
    PE_MISTAKES,
    mha_mistake,
)
from keras_transformer.course.references import np_attention, pe_table


@student_facing
def check_scaled_dot_product_attention(fn) -> None:
    """Checks a student's scaled dot-product attention (section 3.2.1 of the paper).

    Contract: `fn(query, key, value, mask=None) -> (output, weights)`, query
    `(..., q_len, d_k)`, key `(..., kv_len, d_k)`, value `(..., kv_len, d_v)`,
    boolean `mask` (`True` = may attend) broadcastable to `(..., q_len, kv_len)`;
    `weights = softmax(query key^T / sqrt(d_k))` over the keys, masked keys at 0,
    `output = weights value`. Probes: shapes, softmax axis, scaling, masks
    `(batch, q_len, kv_len)`, `(batch, 1, kv_len)`, causal `(q_len, kv_len)`,
    polarity, padded keys, 4-D inputs `(batch, heads, len, d)`, a fully masked row
    (any finite output; NaN from `-inf` masking is named). Mask mistakes named: polarity
    inverted, an additive mask with the wrong sign (+1e9 on the masked keys) or with +1e9
    on the allowed keys (float32 rounds the scores away), the scores multiplied by the mask.
    """
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 16)).astype("float32")
    k = rng.standard_normal((2, 5, 16)).astype("float32")
    v = rng.standard_normal((2, 5, 6)).astype("float32")
    sec = "(section 3.2.1 of the paper)"

    def call(query, key, value, mask=None, what="fn(query, key, value)"):
        result = run(what, fn, query, key, value, mask=mask)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(f"{what} must return a pair (output, weights); got {type(result).__name__}")
        out, w = (as_array(r, what) for r in result)
        batch_dims = query.shape[:-2]
        want_w = (*batch_dims, query.shape[-2], key.shape[-2])
        want_o = (*batch_dims, query.shape[-2], value.shape[-1])
        if w.shape != want_w:
            if w.shape == (*batch_dims, key.shape[-2], query.shape[-2]):
                fail(
                    f"weights have shape {w.shape}, (..., kv_len, q_len): transposed; "
                    f"compute query @ key^T so they are (..., q_len, kv_len) = {want_w} {sec}"
                )
            fail(f"weights have shape {w.shape}; expected (..., q_len, kv_len) = {want_w} {sec}")
        if out.shape != want_o:
            fail(f"output has shape {out.shape}; expected (..., q_len, d_v) = {want_o} {sec}")
        return out, w

    def reference(query, key, value, mask=None):
        out, w = layers.scaled_dot_product_attention(query, key, value, mask=mask)
        return as_array(out, "reference"), as_array(w, "reference")

    # 1. No mask: normalization axis, scaling, output.
    out, w = call(q, k, v)
    if not np.allclose(w.sum(-1), 1.0, atol=1e-3):
        if np.allclose(w.sum(-2), 1.0, atol=1e-3):
            fail(
                "weights do not sum to 1 over the keys: softmax over the wrong axis "
                f"(the queries)? Take the softmax over the last axis, kv_len {sec}"
            )
        fail(f"weights do not sum to 1 over the keys: is the softmax missing? {sec}")
    ref_out, ref_w = reference(q, k, v)
    if not close(w, ref_w):
        for scale, mistake in {
            "none": "the scores are not scaled: divide query @ key^T by sqrt(d_k)",
            "d": "the scores are divided by d_k; divide by sqrt(d_k)",
            "times_sqrt": "the scores are multiplied by sqrt(d_k); divide by it",
            1 / np.sqrt(v.shape[-1]): "the scores are divided by sqrt(d_v); d_k is the "
            "query/key size",
        }.items():
            if close(w, np_attention(q, k, v, scale=scale)[1]):
                fail(f"{mistake} {sec}")
        fail(f"weights differ from softmax(query key^T / sqrt(d_k)) ({max_diff(w, ref_w)}) {sec}")
    if not close(out, ref_out):
        fail(f"output is not weights @ value ({max_diff(out, ref_out)}) {sec}")
    # 2. A full boolean mask: polarity, zero weight on masked keys, masking before the softmax.
    mask = rng.random((2, 3, 5)) > 0.5
    mask[..., 0] = True
    mask[..., 1] = False
    out_m, w_m = call(q, k, v, mask, what="fn(query, key, value, mask=mask)")
    ref_out_m, ref_w_m = reference(q, k, v, mask)
    if not close(w_m, ref_w_m):  # how the mask was applied, when it was applied wrong
        for how, mistake in (
            ("plus_masked", MASK_PLUS_MASKED),
            ("plus_allowed", MASK_PLUS_ALLOWED),
            ("multiply", MASK_MULTIPLIED),
        ):
            if close(w_m, np_attention(q, k, v, mask, mask_as=how)[1]):
                fail(f"{mistake} {sec}")
    leaked = np.abs(w_m[~mask]).max()
    if leaked > 1e-6:
        if np.abs(w_m[mask]).max() < 1e-6:
            fail(
                "mask polarity inverted, or an additive mask with the wrong sign: True means "
                "'may attend' and the keys where mask is False must get weight 0, but the True "
                "keys got weight 0 and the False ones all of it; with np.where(mask, scores, "
                "-1e9) keep the scores where mask is True, and an additive mask adds -1e9 (not "
                f"+1e9) to the masked keys: scores + (1 - mask) * -1e9 {sec}"
            )
        fail(f"a key where mask is False still gets weight {leaked:.3g}; it must get 0 {sec}")
    if not np.allclose(w_m.sum(-1), 1.0, atol=1e-3):
        fail(
            "under a mask the weights no longer sum to 1 over the keys: mask the scores "
            f"before the softmax (a large negative number), not the weights after it {sec}"
        )
    if not (close(w_m, ref_w_m) and close(out_m, ref_out_m)):
        fail(f"masked attention differs from the reference ({max_diff(out_m, ref_out_m)}) {sec}")
    # 3. Padded keys change nothing: two extra keys/values masked out.
    k_pad = np.concatenate([k, rng.standard_normal((2, 2, 16)).astype("float32") * 5], axis=1)
    v_pad = np.concatenate([v, rng.standard_normal((2, 2, 6)).astype("float32") * 5], axis=1)
    mask_pad = np.concatenate([mask, np.zeros((2, 3, 2), bool)], axis=-1)
    out_p, _ = call(q, k_pad, v_pad, mask_pad, what="fn with two padded keys masked out")
    if not close(out_p, out_m):
        fail(f"padded keys (mask False) change the output ({max_diff(out_p, out_m)}) {sec}")
    # 4. Broadcast masks: a padding mask (batch, 1, kv_len) and a causal (q_len, kv_len) one.
    padding = np.array([[[True, True, True, False, False]], [[True, True, True, True, False]]])
    out_b, w_b = call(q, k, v, padding, what="fn with a mask of shape (batch, 1, kv_len)")
    leaked = np.abs(w_b[np.broadcast_to(~padding, w_b.shape)]).max()
    if not close(out_b, reference(q, k, v, padding)[0]) or leaked > 1e-6:
        fail(f"a padding mask of shape (batch, 1, kv_len) is not broadcast over the queries {sec}")
    x = rng.standard_normal((2, 4, 16)).astype("float32")
    causal = np.tril(np.ones((4, 4), bool))
    out_c, w_c = call(x, x, x, causal, what="fn(x, x, x, mask=causal) with a (q_len, kv_len) mask")
    if np.abs(w_c[:, ~causal]).max() > 1e-6:
        fail(
            f"causal mask: a query attends to a later position (section 3.2.3 of the paper, {sec[1:-1]})"
        )
    ref_c, _ = reference(x, x, x, causal)
    if not close(out_c, ref_c):
        fail(f"causal self-attention differs from the reference ({max_diff(out_c, ref_c)}) {sec}")
    # 5. Leading axes (batch, heads, ...): multi-head attention calls it on 4-D tensors.
    q4 = rng.standard_normal((2, 2, 3, 8)).astype("float32")
    k4 = rng.standard_normal((2, 2, 5, 8)).astype("float32")
    v4 = rng.standard_normal((2, 2, 5, 4)).astype("float32")
    out4, _ = call(q4, k4, v4, what="fn on 4-D inputs (batch, heads, len, d)")
    if not close(out4, reference(q4, k4, v4)[0]):
        fail(
            "4-D inputs (batch, heads, len, d) give a wrong result: transpose only the last two "
            f"axes of the key (swapaxes(key, -1, -2)) {sec}"
        )
    # 6. A fully masked row: a query that may attend to no key (a padded query's row under a
    # (batch, q_len, kv_len) mask) must give finite numbers; the other rows stay as they were.
    full = mask.copy()
    full[0, 1] = False
    what = "fn(query, key, value, mask) with row 1 of sentence 0 fully masked"
    out_f, w_f = call(q, k, v, full, what=what)
    if not (np.isfinite(out_f).all() and np.isfinite(w_f).all()):
        fail(
            "a fully masked row (a query whose mask is False for every key, as a padded query's "
            "row is) gives NaN: filling the masked scores with -inf makes that row's softmax "
            "exp(-inf) / sum(exp(-inf)) = 0/0, and the NaN spreads to every position that "
            "reads it; fill with a large finite negative number (-1e9, or the dtype's minimum) "
            f"so the row stays finite {sec}"
        )
    others = np.ones((2, 3), bool)
    others[0, 1] = False
    if not close(out_f[others], out_m[others]):
        fail(f"masking one query's row fully changes the other queries' outputs {sec}")


@student_facing
def check_positional_encoding(fn) -> None:
    """Checks a student's sinusoidal positional encoding (section 3.5 of the paper).

    Contract: `fn(length, depth)` returns a `(length, depth)` table for positions
    `0 .. length - 1`, `PE[pos, 2i] = sin(pos / 10000^(2i/depth))` and
    `PE[pos, 2i+1] = cos(pos / 10000^(2i/depth))` interleaved; even `depth` only.
    Mistakes named: transposed, concatenated (the TensorFlow tutorial's layout),
    sine and cosine swapped, exponents `i/d` or from the column index, positions
    from 1, any other wrong frequency (by column).
    """
    sec = "(section 3.5 of the paper)"
    for length, depth in ((50, 16), (9, 6)):
        what, shape = f"fn({length}, {depth})", (length, depth)
        table = as_array(run(what, fn, length, depth), what)
        if table.shape != shape:
            if table.shape == (depth, length):
                fail(f"{what} has shape {table.shape}: transposed; return (length, depth) {sec}")
            fail(f"{what} has shape {table.shape}; expected (length, depth) = {shape} {sec}")
        expected = pe_table(length, depth)
        if np.allclose(table, expected, atol=1e-4):
            continue
        for mistake, message in PE_MISTAKES.items():
            if np.allclose(table, pe_table(length, depth, mistake), atol=1e-4):
                fail(f"{what}: {message} {sec}")
        if not np.allclose(table[0], np.arange(depth) % 2, atol=1e-4):  # sin 0 = 0, cos 0 = 1
            fail(
                f"{what}: at pos = 0 the even columns (sines) must be 0 and the odd ones "
                f"(cosines) 1; got {np.round(table[0, :6], 3).tolist()}... {sec}"
            )
        column = int(np.flatnonzero(~np.isclose(table, expected, atol=1e-4).all(axis=0))[0])
        fail(
            f"{what}: column {column} differs from {'sin' if column % 2 == 0 else 'cos'}"
            f"(pos / 10000^({column - column % 2}/{depth})) "
            f"({max_diff(table[:, column], expected[:, column])}); check the frequencies {sec}"
        )


_MHA_LAYOUT = (
    "query, key, value and output projections, each a kernel (d_model, d_model) and a "
    "bias (d_model,) (four keras.layers.Dense(d_model))"
)


@student_facing
def check_multi_head_attention(cls, d_model: int = 32, num_heads: int = 4) -> None:
    """Checks a student's multi-head attention layer (section 3.2.2 of the paper).

    Contract: `cls(d_model=..., num_heads=...)` is a `keras.layers.Layer`;
    `layer(query, value, key=None, attention_mask=None)` (key defaults to value,
    mask boolean `(batch, q_len, kv_len)`, `True` = may attend) returns
    `(batch, q_len, d_model)`. Trainable weights, in creation order: query, key,
    value and output projections, each kernel `(d_model, d_model)` and bias
    `(d_model,)`; head `i` uses columns `i*d_head:(i+1)*d_head` and scales by
    `1/sqrt(d_head)`. No `build()` needed: the checker calls the layer once, then
    copies random weights into it and into `kt.layers.MultiHeadAttention`.
    Mistakes named: scaling, softmax axis, mask polarity, an additive mask with +1e9 on
    the masked or on the allowed keys, the scores multiplied by the mask, head split and merge,
    key/value swapped, no output projection, masked keys or later positions
    changing the output. `d_model`, `num_heads`: probe sizes (d_head = 8 tells
    d_head, sqrt(d_head) and sqrt(d_model) apart).
    """
    sec = "(section 3.2.2 of the paper)"
    rng = np.random.default_rng(1)
    b, q_len, kv_len = 2, 3, 5
    layer = make_layer(cls, d_model=d_model, num_heads=num_heads)
    xq = rng.standard_normal((b, q_len, d_model)).astype("float32")
    xv = rng.standard_normal((b, kv_len, d_model)).astype("float32")
    xk = rng.standard_normal((b, kv_len, d_model)).astype("float32")

    def call(*args, what="layer(query, value)", **kwargs):
        out = run(what, layer, *args, **kwargs)
        want = (args[0].shape[0], args[0].shape[1], d_model)
        return shaped_output(what, out, want, sec, "(batch, q_len, d_model) = ")

    call(xq, xv)  # creates the weights of a layer without build()
    weights = random_weights(rng, [(d_model, d_model), (d_model,)] * 4)
    copy_weights(layer, weights, "the layer", _MHA_LAYOUT)
    reference = layers.MultiHeadAttention(num_heads=num_heads, key_dim=d_model // num_heads)
    reference(xq, xv)
    copy_weights(reference, weights, "reference", _MHA_LAYOUT)

    def compare(student, what, query, value, **kwargs):
        expected = as_array(reference(query, value, **kwargs), "reference")
        if close(student, expected):
            return
        mistake = mha_mistake(student, weights, num_heads, query, value, **kwargs)
        if mistake:
            fail(f"{what}: {mistake}")
        fail(
            f"{what} differs from multi-head attention with the same weights "
            f"({max_diff(student, expected)}): check the projections (query, key, value, output, "
            f"in that order), the head split and merge, the scaling and the softmax {sec}"
        )

    compare(call(xq, xv), "layer(query, value)", xq, xv)
    what = "layer(query, value, key=key)"
    compare(call(xq, xv, key=xk, what=what), what, xq, xv, key=xk)

    mask = rng.random((b, q_len, kv_len)) > 0.5
    mask[..., 0] = True
    mask[..., 1] = False
    what = "layer(query, value, attention_mask=mask)"
    masked = call(xq, xv, attention_mask=mask, what=what)
    compare(masked, what, xq, xv, attention_mask=mask)

    pad = rng.standard_normal((b, 2, d_model)).astype("float32") * 5
    xv_pad = np.concatenate([xv, pad], axis=1)
    mask_pad = np.concatenate([mask, np.zeros((b, q_len, 2), bool)], axis=-1)
    padded = call(xq, xv_pad, attention_mask=mask_pad, what="layer with two padded keys masked out")
    if not close(padded, masked):
        fail(
            "keys where attention_mask is False change the output: padded keys must get "
            f"weight 0 ({max_diff(padded, masked)}) (section 3.2.3 of the paper)"
        )

    x = rng.standard_normal((b, 4, d_model)).astype("float32")
    causal = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (b, 4, 4))
    what = "layer(x, x, attention_mask=causal)"
    out_c = call(x, x, attention_mask=causal, what=what)
    x_later = x.copy()
    x_later[:, -1] = rng.standard_normal((b, d_model)) * 5
    if not close(out_c[:, :-1], call(x_later, x_later, attention_mask=causal, what=what)[:, :-1]):
        fail(
            "with a causal mask, changing the last position changes the outputs of earlier "
            "positions: masked keys must get weight 0 (section 3.2.3 of the paper)"
        )
    compare(out_c, "causal self-attention", x, x, attention_mask=causal)
