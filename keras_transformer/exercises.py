"""Checkers for the pieces of the Transformer a student writes (coursework).

Each checker takes the student's function or Keras `Layer` class, runs it on
small batches next to the package's reference (`kt.layers`, with the same
weights copied in where the contract fixes the weight layout), probes the
behaviour the paper asks for (masking, causality, padding invariance, scaling),
and returns `None` when everything holds. Otherwise it raises `AssertionError`
whose message names the mistake and the section of "Attention Is All You Need"
to re-read, for example:

    weights do not sum to 1 over the keys: softmax over the wrong axis (the
    queries)? (section 3.2.1)

The contract of each checker (what is called, with which arguments and shapes,
and which weights the layer must hold) is written in its docstring. Inputs are
NumPy float32 arrays and NumPy boolean masks; a student's code may return NumPy
arrays or tensors. Everything runs on tiny shapes, in well under a second each.

Example:

>>> import numpy as np
>>> from keras_transformer import exercises
>>> def attention(query, key, value, mask=None):
...     scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
...     if mask is not None:
...         scores = np.where(mask, scores, -1e9)
...     weights = np.exp(scores - scores.max(-1, keepdims=True))
...     weights = weights / weights.sum(-1, keepdims=True)
...     return weights @ value, weights
>>> exercises.check_scaled_dot_product_attention(attention) is None
True
"""

from __future__ import annotations

import inspect

import keras
import numpy as np

from keras_transformer import layers as _layers

__all__ = [
    "check_add_norm",
    "check_decoder_layer",
    "check_encoder_layer",
    "check_feed_forward",
    "check_masked_loss",
    "check_multi_head_attention",
    "check_positional_encoding",
    "check_scaled_dot_product_attention",
]

_RTOL, _ATOL = 1e-3, 1e-4


def _fail(message: str):
    raise AssertionError(message)


def _run(what: str, fn, *args, **kwargs):
    """Calls the student's code; its exceptions become one readable AssertionError."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        _fail(f"{what} is not implemented yet: it raised NotImplementedError")
    except AssertionError:
        raise
    except Exception as error:  # the student's bug, reported, not a crash of the checker
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        _fail(f"{what} raised {type(error).__name__}: {first[:300]}")


def _array(x, what: str) -> np.ndarray:
    try:
        return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")
    except Exception as error:
        _fail(f"{what} is not an array or tensor of numbers ({type(x).__name__}: {error})")


def _close(a, b, loose=False) -> bool:
    """Equal up to float32 round-off (`loose`: up to a LayerNorm epsilon of 1e-3)."""
    rtol, atol = (1e-2, 3e-3) if loose else (_RTOL, _ATOL)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _max_diff(a, b) -> str:
    return f"largest difference {np.max(np.abs(a - b)):.3g}"


def _softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _np_attention(q, k, v, mask=None, scale="sqrt", axis=-1, invert_mask=False):
    """softmax(q k^T * scale) v in NumPy, with the mistakes the checkers diagnose."""
    d_k = q.shape[-1]
    factor = {"sqrt": 1 / np.sqrt(d_k), "none": 1.0, "d": 1 / d_k, "times_sqrt": np.sqrt(d_k)}
    factor = factor[scale] if isinstance(scale, str) else scale
    scores = q @ np.swapaxes(k, -1, -2) * factor  # (..., q_len, kv_len)
    if mask is not None:
        mask = np.logical_not(mask) if invert_mask else np.asarray(mask, bool)
        scores = np.where(mask, scores, -1e9)
    weights = _softmax(scores, axis)
    return weights @ v, weights


def _split(x, heads, how):
    b, length, d = x.shape
    dh = d // heads
    if how == "no_transpose":  # (batch, len, d) read as (batch, heads, len, d_head)
        return x.reshape(b, heads, length, dh)
    if how == "strided":  # head i takes columns i, i + heads, ...
        return x.reshape(b, length, dh, heads).transpose(0, 3, 1, 2)
    return x.reshape(b, length, heads, dh).transpose(0, 2, 1, 3)


def _merge(x, how):
    b, heads, length, dh = x.shape
    if how == "no_transpose":
        return x.reshape(b, length, heads * dh)
    if how == "strided":
        return x.transpose(0, 2, 3, 1).reshape(b, length, heads * dh)
    return x.transpose(0, 2, 1, 3).reshape(b, length, heads * dh)


def _np_mha(weights, heads, query, value, key=None, mask=None, **variant):
    """Multi-head attention in NumPy from 2-D kernels; `variant` switches in one mistake."""
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    key = value if key is None else key
    if variant.get("swap_key_value"):
        key, value = value, key
    split = variant.get("split", "heads")
    merge = variant.get("merge", "heads")
    q = _split(query @ wq + bq, heads, split)  # (batch, heads, q_len, d_head)
    k = _split(key @ wk + bk, heads, split)  # (batch, heads, kv_len, d_head)
    v = _split(value @ wv + bv, heads, split)
    if mask is not None:
        mask = np.asarray(mask, bool)[:, None]  # (batch, 1, q_len, kv_len)
    out, _ = _np_attention(
        q,
        k,
        v,
        mask,
        scale=variant.get("scale", "sqrt"),
        axis=variant.get("axis", -1),
        invert_mask=variant.get("invert_mask", False),
    )
    out = _merge(out, merge)  # (batch, q_len, d_model)
    return out if variant.get("no_output_projection") else out @ wo + bo


def _np_layer_norm(x, gamma, beta, epsilon=1e-6, axis=-1):
    mean = x.mean(axis=axis, keepdims=True)
    var = x.var(axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * gamma + beta


def _make_layer(cls, **kwargs):
    arguments = ", ".join(f"{key}={value}" for key, value in kwargs.items())
    what = f"{getattr(cls, '__name__', 'cls')}({arguments})"
    layer = _run(what, cls, **kwargs)
    if not isinstance(layer, keras.layers.Layer):
        _fail(f"{what} returned {type(layer).__name__}, not a keras.layers.Layer subclass")
    return layer


def _copy_weights(layer, arrays, what: str, layout: str):
    """Assigns `arrays` to the layer's trainable weights in creation order (reshaped)."""
    variables = list(layer.trainable_weights)
    found = [tuple(v.shape) for v in variables]
    expected = [a.shape for a in arrays]
    if len(variables) != len(arrays) or any(
        int(np.prod(f)) != int(np.prod(e)) for f, e in zip(found, expected, strict=False)
    ):
        _fail(
            f"{what} should hold {len(arrays)} trainable weights, in creation order: {layout}, "
            f"shapes {expected}; found {len(variables)}: {found}"
        )
    for variable, array in zip(variables, arrays, strict=True):
        variable.assign(np.reshape(array, variable.shape).astype(variable.dtype))


def _random_weights(rng, shapes, scale=0.4):
    arrays = []
    for shape in shapes:
        size = scale if len(shape) > 1 else 0.1
        arrays.append((rng.standard_normal(shape) * size).astype("float32"))
    return arrays


def _mha_shapes(d):
    return [(d, d), (d,)] * 4


def _ln_weights(rng, d):
    gamma = (1.0 + 0.2 * rng.standard_normal(d)).astype("float32")
    beta = (0.1 * rng.standard_normal(d)).astype("float32")
    return [gamma, beta]


def check_scaled_dot_product_attention(fn) -> None:
    """Checks a student's scaled dot-product attention (section 3.2.1).

    Contract: `fn(query, key, value, mask=None) -> (output, weights)` with
    query `(..., q_len, d_k)`, key `(..., kv_len, d_k)`, value `(..., kv_len, d_v)`;
    `mask` is boolean, `True` = may attend, broadcastable to `(..., q_len, kv_len)`.
    Returns output `(..., q_len, d_v)` and weights `(..., q_len, kv_len)`, with
    `weights = softmax(query key^T / sqrt(d_k))` over the keys, masked keys at
    weight 0, and `output = weights value`. NumPy or Keras operations both work.

    Probes: shapes, rows of the weights summing to 1 over the keys, the values
    against `kt.layers.scaled_dot_product_attention`, the scaling (none, `d_k`,
    times `sqrt(d_k)`), the softmax axis, masks of shape `(batch, q_len, kv_len)`,
    `(batch, 1, kv_len)` and `(q_len, kv_len)` (causal), mask polarity, padded
    keys, and 4-D inputs `(batch, heads, len, d)`.

    Returns `None` when every probe passes, else raises `AssertionError` naming the mistake.
    """
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 16)).astype("float32")
    k = rng.standard_normal((2, 5, 16)).astype("float32")
    v = rng.standard_normal((2, 5, 6)).astype("float32")
    sec = "(section 3.2.1)"

    def call(query, key, value, mask=None, what="fn(query, key, value)"):
        result = _run(what, fn, query, key, value, mask=mask)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            _fail(f"{what} must return a pair (output, weights); got {type(result).__name__}")
        out, weights = (_array(r, what) for r in result)
        batch_dims = query.shape[:-2]
        want_w = (*batch_dims, query.shape[-2], key.shape[-2])
        want_o = (*batch_dims, query.shape[-2], value.shape[-1])
        if weights.shape != want_w:
            if weights.shape == (*batch_dims, key.shape[-2], query.shape[-2]):
                _fail(
                    f"weights have shape {weights.shape}, (..., kv_len, q_len): transposed; "
                    f"compute query @ key^T so they are (..., q_len, kv_len) = {want_w} {sec}"
                )
            _fail(
                f"weights have shape {weights.shape}; expected (..., q_len, kv_len) = {want_w} {sec}"
            )
        if out.shape != want_o:
            _fail(f"output has shape {out.shape}; expected (..., q_len, d_v) = {want_o} {sec}")
        return out, weights

    def reference(query, key, value, mask=None):
        out, weights = _layers.scaled_dot_product_attention(query, key, value, mask=mask)
        return _array(out, "reference"), _array(weights, "reference")

    # 1. No mask: normalization axis, scaling, output.
    out, weights = call(q, k, v)
    if not np.allclose(weights.sum(-1), 1.0, atol=1e-3):
        if np.allclose(weights.sum(-2), 1.0, atol=1e-3):
            _fail(
                "weights do not sum to 1 over the keys: softmax over the wrong axis "
                f"(the queries)? Take the softmax over the last axis, kv_len {sec}"
            )
        _fail(f"weights do not sum to 1 over the keys: is the softmax missing? {sec}")
    ref_out, ref_w = reference(q, k, v)
    if not _close(weights, ref_w):
        for scale, mistake in (
            ("none", "the scores are not scaled: divide query @ key^T by sqrt(d_k)"),
            ("d", "the scores are divided by d_k; divide by sqrt(d_k)"),
            ("times_sqrt", "the scores are multiplied by sqrt(d_k); divide by it"),
            (
                1 / np.sqrt(v.shape[-1]),
                "the scores are divided by sqrt(d_v); d_k is the query/key size",
            ),
        ):
            if _close(weights, _np_attention(q, k, v, scale=scale)[1]):
                _fail(f"{mistake} {sec}")
        _fail(
            f"weights differ from softmax(query key^T / sqrt(d_k)) ({_max_diff(weights, ref_w)}) {sec}"
        )
    if not _close(out, ref_out):
        _fail(f"output is not weights @ value ({_max_diff(out, ref_out)}) {sec}")

    # 2. A full boolean mask: polarity, zero weight on masked keys, masking before the softmax.
    mask = rng.random((2, 3, 5)) > 0.5
    mask[..., 0] = True
    mask[..., 1] = False
    out_m, w_m = call(q, k, v, mask, what="fn(query, key, value, mask=mask)")
    leaked = np.abs(w_m[~mask]).max()
    if leaked > 1e-6:
        if np.abs(w_m[mask]).max() < 1e-6:
            _fail(
                "mask polarity inverted: True means 'may attend', False keys must get "
                f"weight 0; the True keys got weight 0 instead {sec}"
            )
        _fail(f"a key where mask is False still gets weight {leaked:.3g}; it must get 0 {sec}")
    if not np.allclose(w_m.sum(-1), 1.0, atol=1e-3):
        _fail(
            "under a mask the weights no longer sum to 1 over the keys: mask the scores "
            f"before the softmax (a large negative number), not the weights after it {sec}"
        )
    ref_out_m, ref_w_m = reference(q, k, v, mask)
    if not (_close(w_m, ref_w_m) and _close(out_m, ref_out_m)):
        _fail(f"masked attention differs from the reference ({_max_diff(out_m, ref_out_m)}) {sec}")

    # 3. Padded keys change nothing: two extra keys/values masked out.
    k_pad = np.concatenate([k, rng.standard_normal((2, 2, 16)).astype("float32") * 5], axis=1)
    v_pad = np.concatenate([v, rng.standard_normal((2, 2, 6)).astype("float32") * 5], axis=1)
    mask_pad = np.concatenate([mask, np.zeros((2, 3, 2), bool)], axis=-1)
    out_p, _ = call(q, k_pad, v_pad, mask_pad, what="fn with two padded keys masked out")
    if not _close(out_p, out_m):
        _fail(f"padded keys (mask False) change the output ({_max_diff(out_p, out_m)}) {sec}")

    # 4. Broadcast masks: a padding mask (batch, 1, kv_len) and a causal (q_len, kv_len) one.
    padding = np.array([[[True, True, True, False, False]], [[True, True, True, True, False]]])
    out_b, w_b = call(q, k, v, padding, what="fn with a mask of shape (batch, 1, kv_len)")
    ref_out_b, _ = reference(q, k, v, padding)
    if (
        not _close(out_b, ref_out_b)
        or np.abs(w_b[np.broadcast_to(~padding, w_b.shape)]).max() > 1e-6
    ):
        _fail(f"a padding mask of shape (batch, 1, kv_len) is not broadcast over the queries {sec}")
    x = rng.standard_normal((2, 4, 16)).astype("float32")
    causal = np.tril(np.ones((4, 4), bool))
    out_c, w_c = call(x, x, x, causal, what="fn(x, x, x, mask=causal) with a (q_len, kv_len) mask")
    if np.abs(w_c[:, ~causal]).max() > 1e-6:
        _fail(f"causal mask: a query attends to a later position (section 3.2.3, {sec[1:-1]})")
    ref_out_c, _ = reference(x, x, x, causal)
    if not _close(out_c, ref_out_c):
        _fail(
            f"causal self-attention differs from the reference ({_max_diff(out_c, ref_out_c)}) {sec}"
        )

    # 5. Leading axes (batch, heads, ...): multi-head attention calls it on 4-D tensors.
    q4 = rng.standard_normal((2, 2, 3, 8)).astype("float32")
    k4 = rng.standard_normal((2, 2, 5, 8)).astype("float32")
    v4 = rng.standard_normal((2, 2, 5, 4)).astype("float32")
    out4, _ = call(q4, k4, v4, what="fn on 4-D inputs (batch, heads, len, d)")
    ref_out4, _ = reference(q4, k4, v4)
    if not _close(out4, ref_out4):
        _fail(
            "4-D inputs (batch, heads, len, d) give a wrong result: transpose only the last two "
            f"axes of the key (swapaxes(key, -1, -2)) {sec}"
        )
    return None


def _pe_table(length, depth, layout="paper", exponent="2i", start=0):
    pos = np.arange(start, start + length, dtype="float64")[:, None]  # (length, 1)
    pair = np.arange(depth // 2, dtype="float64")[None, :]  # (1, depth / 2)
    if exponent == "i":  # the pair index without the factor 2
        rates = [1 / 10000 ** (pair / depth)] * 2
    elif exponent == "2j":  # 2 * column index: columns 2i, 2i + 1 use 4i/d, (4i + 2)/d
        rates = [1 / 10000 ** (2 * 2 * pair / depth), 1 / 10000 ** (2 * (2 * pair + 1) / depth)]
    elif exponent == "j":  # column index: the cosine of a pair uses (2i + 1)/d
        rates = [1 / 10000 ** (2 * pair / depth), 1 / 10000 ** ((2 * pair + 1) / depth)]
    else:
        rates = [1 / 10000 ** (2 * pair / depth)] * 2
    sines, cosines = np.sin(pos * rates[0]), np.cos(pos * rates[1])
    if layout == "concatenated":
        return np.concatenate([sines, cosines], axis=-1)
    table = np.empty((length, depth))
    first, second = (cosines, sines) if layout == "swapped" else (sines, cosines)
    table[:, 0::2], table[:, 1::2] = first, second
    return table


def check_positional_encoding(fn) -> None:
    """Checks a student's sinusoidal positional encoding (section 3.5).

    Contract: `fn(length, depth)` returns a `(length, depth)` array (NumPy or a
    tensor) for positions `0 .. length - 1` in the paper's interleaved layout:
    `PE[pos, 2i] = sin(pos / 10000^(2i/depth))` and
    `PE[pos, 2i+1] = cos(pos / 10000^(2i/depth))`. Only even `depth` is probed.

    Mistakes named: transposed table, the concatenated layout (all sines, then all
    cosines, as in the TensorFlow tutorial), sine and cosine swapped, the exponent
    `i/d` instead of `2i/d`, the exponent built from the column index, positions
    starting at 1, and any other wrong frequency (by column).

    Returns `None` when every probe passes, else raises `AssertionError` naming the mistake.
    """
    sec = "(section 3.5)"
    for length, depth in ((50, 16), (9, 6)):
        what = f"fn({length}, {depth})"
        table = _array(_run(what, fn, length, depth), what)
        if table.shape != (length, depth):
            if table.shape == (depth, length):
                _fail(f"{what} has shape {table.shape}: transposed; return (length, depth) {sec}")
            _fail(
                f"{what} has shape {table.shape}; expected (length, depth) = {(length, depth)} {sec}"
            )
        expected = _pe_table(length, depth)
        if np.allclose(table, expected, atol=1e-4):
            continue
        for kwargs, mistake in (
            (
                {"layout": "concatenated"},
                "concatenated layout: all sines, then all cosines; the paper interleaves them, "
                "PE[pos, 2i] = sin(...) and PE[pos, 2i+1] = cos(...)",
            ),
            (
                {"layout": "swapped"},
                "sine and cosine swapped: even columns 2i hold the sine, odd columns 2i+1 the cosine",
            ),
            (
                {"exponent": "i"},
                "wrong exponent: pos / 10000^(i/d) with i the pair index; the paper uses 2i/d",
            ),
            (
                {"exponent": "2j"},
                "wrong exponent: 2j/d with j the column index; use 2i/d with i the pair index "
                "(columns 2i and 2i+1 share one frequency)",
            ),
            (
                {"exponent": "j"},
                "wrong exponent: the cosine column 2i+1 uses (2i+1)/d; the sine and the cosine of a "
                "pair share the frequency 1 / 10000^(2i/d)",
            ),
            ({"start": 1}, "positions start at 1; the first position is pos = 0"),
        ):
            if np.allclose(table, _pe_table(length, depth, **kwargs), atol=1e-4):
                _fail(f"{what}: {mistake} {sec}")
        if not np.allclose(table[0, 0::2], 0.0, atol=1e-4) or not np.allclose(
            table[0, 1::2], 1.0, atol=1e-4
        ):
            _fail(
                f"{what}: at pos = 0 the even columns (sines) must be 0 and the odd ones "
                f"(cosines) 1; got {np.round(table[0, :6], 3).tolist()}... {sec}"
            )
        wrong = np.flatnonzero(~np.all(np.isclose(table, expected, atol=1e-4), axis=0))
        column = int(wrong[0])
        i = column // 2
        _fail(
            f"{what}: column {column} differs from {'sin' if column % 2 == 0 else 'cos'}"
            f"(pos / 10000^({2 * i}/{depth})) ({_max_diff(table[:, column], expected[:, column])}); "
            f"check the frequencies {sec}"
        )
    return None


_MHA_LAYOUT = (
    "query, key, value and output projections, each a kernel (d_model, d_model) and a "
    "bias (d_model,) (four keras.layers.Dense(d_model))"
)


def _mha_diagnose(student, weights, heads, query, value, key=None, mask=None) -> str | None:
    """Names the mistake whose NumPy version reproduces the student's output."""
    d_head = query.shape[-1] // heads
    variants = (
        ({"scale": "none"}, "the scores are not scaled by 1/sqrt(d_head) (section 3.2.1)"),
        (
            {"scale": "d"},
            "the scores are divided by d_head; divide by sqrt(d_head) (section 3.2.1)",
        ),
        (
            {"scale": 1 / np.sqrt(query.shape[-1])},
            "the scores are divided by sqrt(d_model); each head scales by sqrt(d_k) with "
            f"d_k = d_model / num_heads = {d_head} (section 3.2.2)",
        ),
        (
            {"axis": -2},
            "weights do not sum to 1 over the keys: softmax over the queries instead of "
            "the keys (section 3.2.1)",
        ),
        (
            {"invert_mask": True},
            "mask polarity inverted: attention_mask True means 'may attend' (section 3.2.3)",
        ),
        *(
            (
                {"split": "no_transpose", "merge": merge},
                "wrong head split: (batch, len, d_model) reshaped straight to (batch, heads, len, "
                "d_head); reshape to (batch, len, heads, d_head), then transpose (section 3.2.2)",
            )
            for merge in ("heads", "no_transpose")
        ),
        *(
            (
                {"split": "strided", "merge": merge},
                "wrong head split: head i takes every num_heads-th column; it takes the block "
                "i*d_head:(i+1)*d_head (section 3.2.2)",
            )
            for merge in ("heads", "strided")
        ),
        (
            {"merge": "no_transpose"},
            "wrong head merge: transpose (batch, heads, len, d_head) back to (batch, len, heads, "
            "d_head) before reshaping to (batch, len, d_model) (section 3.2.2)",
        ),
        (
            {"swap_key_value": True},
            "key and value swapped: the call is layer(query, value, key=None), key defaults "
            "to value (section 3.2.2)",
        ),
        (
            {"no_output_projection": True},
            "the output projection W^O is not applied to the concatenated heads (section 3.2.2)",
        ),
    )
    for variant, mistake in variants:
        if variant.get("invert_mask") and mask is None:
            continue
        if _close(student, _np_mha(weights, heads, query, value, key, mask, **variant)):
            return mistake
    if mask is not None and _close(student, _np_mha(weights, heads, query, value, key)):
        return "attention_mask is ignored: keys where it is False must get weight 0 (section 3.2.3)"
    return None


def check_multi_head_attention(cls, d_model: int = 32, num_heads: int = 4) -> None:
    """Checks a student's multi-head attention layer (section 3.2.2).

    Contract: `cls(d_model=..., num_heads=...)` is a `keras.layers.Layer` called as
    `layer(query, value, key=None, attention_mask=None)` with query
    `(batch, q_len, d_model)`, value and key `(batch, kv_len, d_model)` (key
    defaults to value) and `attention_mask` boolean `(batch, q_len, kv_len)`,
    `True` = may attend; it returns `(batch, q_len, d_model)`. Its trainable
    weights, in creation order, are the query, key, value and output projections,
    each a kernel `(d_model, d_model)` and a bias `(d_model,)` (four
    `keras.layers.Dense(d_model)`); head `i` uses columns
    `i*d_head:(i+1)*d_head` with `d_head = d_model // num_heads`, and scales
    its scores by `1/sqrt(d_head)`. The layer needs no `build()` method: the
    checker calls it once to create the weights, then copies random weights
    into it and into `kt.layers.MultiHeadAttention` and compares the outputs.

    Probes: cross-attention (q_len != kv_len), a key distinct from the value,
    a random attention mask (polarity), padded keys masked out, a causal mask
    (later positions must not change earlier outputs); mistakes named: scaling
    (none, `d_head`, `sqrt(d_model)`), softmax over the queries, mask polarity,
    head split and merge, key/value swapped, missing output projection.

    `d_model`, `num_heads`: sizes of the probe (defaults 32 and 4: d_head = 8, so dividing by
    d_head, sqrt(d_head) or sqrt(d_model) all differ). Returns `None` when every probe passes,
    else raises `AssertionError` naming the mistake.
    """
    sec = "(section 3.2.2)"
    rng = np.random.default_rng(1)
    b, q_len, kv_len = 2, 3, 5
    layer = _make_layer(cls, d_model=d_model, num_heads=num_heads)
    xq = rng.standard_normal((b, q_len, d_model)).astype("float32")
    xv = rng.standard_normal((b, kv_len, d_model)).astype("float32")
    xk = rng.standard_normal((b, kv_len, d_model)).astype("float32")

    def call(*args, what="layer(query, value)", **kwargs):
        out = _array(_run(what, layer, *args, **kwargs), what)
        want = (args[0].shape[0], args[0].shape[1], d_model)
        if out.shape != want:
            _fail(
                f"{what} returned shape {out.shape}; expected (batch, q_len, d_model) = {want} {sec}"
            )
        return out

    call(xq, xv)  # creates the weights of a layer without build()
    weights = _random_weights(rng, _mha_shapes(d_model))
    _copy_weights(layer, weights, "the layer", _MHA_LAYOUT)
    reference = _layers.MultiHeadAttention(num_heads=num_heads, key_dim=d_model // num_heads)
    reference(xq, xv)
    for variable, array in zip(reference.trainable_weights, weights, strict=True):
        variable.assign(np.reshape(array, variable.shape))

    def compare(student, args, kwargs, mask=None, what=""):
        expected = _array(reference(*args, **kwargs), "reference")
        if _close(student, expected):
            return
        query, value = args[0], args[1]
        mistake = _mha_diagnose(student, weights, num_heads, query, value, kwargs.get("key"), mask)
        if mistake:
            _fail(f"{what}: {mistake}")
        _fail(
            f"{what} differs from multi-head attention with the same weights "
            f"({_max_diff(student, expected)}): check the projections (query, key, value, output, "
            f"in that order), the head split and merge, the scaling and the softmax {sec}"
        )

    compare(call(xq, xv), (xq, xv), {}, what="layer(query, value)")
    out = call(xq, xv, key=xk, what="layer(query, value, key=key)")
    compare(out, (xq, xv), {"key": xk}, what="layer(query, value, key=key)")

    mask = rng.random((b, q_len, kv_len)) > 0.5
    mask[..., 0] = True
    mask[..., 1] = False
    masked = call(xq, xv, attention_mask=mask, what="layer(query, value, attention_mask=mask)")
    compare(
        masked,
        (xq, xv),
        {"attention_mask": mask},
        mask,
        what="layer(query, value, attention_mask=mask)",
    )

    pad = rng.standard_normal((b, 2, d_model)).astype("float32") * 5
    xv_pad = np.concatenate([xv, pad], axis=1)
    mask_pad = np.concatenate([mask, np.zeros((b, q_len, 2), bool)], axis=-1)
    padded = call(xq, xv_pad, attention_mask=mask_pad, what="layer with two padded keys masked out")
    if not _close(padded, masked):
        _fail(
            "keys where attention_mask is False change the output: padded keys must get "
            f"weight 0 ({_max_diff(padded, masked)}) (section 3.2.3)"
        )

    x = rng.standard_normal((b, 4, d_model)).astype("float32")
    causal = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (b, 4, 4))
    out_c = call(x, x, attention_mask=causal, what="layer(x, x, attention_mask=causal)")
    x_later = x.copy()
    x_later[:, -1] = rng.standard_normal((b, d_model)) * 5
    out_later = call(
        x_later, x_later, attention_mask=causal, what="layer(x, x, attention_mask=causal)"
    )
    if not _close(out_c[:, :-1], out_later[:, :-1]):
        _fail(
            "with a causal mask, changing the last position changes the outputs of earlier "
            "positions: masked keys must get weight 0 (section 3.2.3)"
        )
    compare(out_c, (x, x), {"attention_mask": causal}, causal, what="causal self-attention")
    return None


def check_add_norm(cls, d_model: int = 8) -> None:
    """Checks a student's residual connection + layer normalization (section 3.1).

    Contract: `cls()` is a `keras.layers.Layer` called as
    `layer(x, sublayer_output)` with two `(batch, seq_len, d_model)` tensors; it
    returns `LayerNorm(x + sublayer_output)` (post-LN, the paper's choice), the
    normalization over the last axis with a learned scale `gamma (d_model,)` and
    offset `beta (d_model,)`, its only trainable weights, in that order (a
    `keras.layers.LayerNormalization`; any epsilon up to 1e-3). The checker copies
    random `gamma`, `beta` into it and into `kt.layers.AddNorm` and compares.

    Mistakes named: no residual (`LayerNorm(sublayer_output)`), pre-LN
    (`x + LayerNorm(sublayer_output)`), `LayerNorm(x) + sublayer_output`, no
    normalization, normalization over the wrong axis.
    """
    sec = "(section 3.1)"
    rng = np.random.default_rng(2)
    layer = _make_layer(cls)
    x = (3.0 + 2.0 * rng.standard_normal((2, 5, d_model))).astype("float32")
    sub = (-1.0 + 0.5 * rng.standard_normal((2, 5, d_model))).astype("float32")
    what = "layer(x, sublayer_output)"
    _run(what, layer, x, sub)
    if not layer.trainable_weights:
        out = _array(_run(what, layer, x, sub), what)
        if _close(out, x + sub):
            _fail(
                f"{what}: no normalization: LayerNorm(x + sublayer_output) normalizes each position over d_model {sec}"
            )
        _fail(
            f"{what}: the layer has no learned scale gamma and offset beta; use keras.layers.LayerNormalization {sec}"
        )
    gamma, beta = _ln_weights(rng, d_model)
    _copy_weights(layer, [gamma, beta], "the layer", "the layer normalization's gamma and beta")
    out = _array(_run(what, layer, x, sub), what)
    if out.shape != x.shape:
        _fail(f"{what} returned shape {out.shape}; expected {x.shape} {sec}")
    reference = _layers.AddNorm()
    reference(x, sub)
    for variable, array in zip(reference.trainable_weights, (gamma, beta), strict=True):
        variable.assign(array)
    expected = _array(reference(x, sub), "reference")
    if np.allclose(out, expected, rtol=1e-2, atol=2e-3):
        return None
    ln = _np_layer_norm
    for candidate, mistake in (
        (ln(sub, gamma, beta), "no residual: normalize x + sublayer_output, not sublayer_output alone"),
        (x + ln(sub, gamma, beta), "pre-LN: the paper normalizes after the residual add, LayerNorm(x + sublayer_output)"),
        (ln(x, gamma, beta) + sub, "LayerNorm(x) + sublayer_output: add first, then normalize"),
        ((x + sub) * gamma + beta, "no normalization: LayerNorm(x + sublayer_output) normalizes each position over d_model"),
        (x + sub, "no normalization: LayerNorm(x + sublayer_output) normalizes each position over d_model"),
        (ln(x + sub, gamma, beta, axis=1), "normalized over the sequence axis; layer normalization is over the last axis, d_model"),
    ):  # fmt: skip
        if np.allclose(out, candidate, rtol=1e-2, atol=2e-3):
            _fail(f"{what}: {mistake} {sec}")
    _fail(f"{what} differs from LayerNorm(x + sublayer_output) ({_max_diff(out, expected)}) {sec}")


def check_feed_forward(cls, d_model: int = 8, dff: int = 24) -> None:
    """Checks a student's position-wise feed-forward network (section 3.3).

    Contract: `cls(d_model=..., dff=...)` is a `keras.layers.Layer` called as
    `layer(x)` on `(batch, seq_len, d_model)`; it returns
    `FFN(x) = max(0, x W1 + b1) W2 + b2`, `(batch, seq_len, d_model)`, with no
    residual, normalization or dropout (`kt.layers.FeedForward` adds Add & Norm
    around it). Trainable weights, in creation order: `W1 (d_model, dff)`,
    `b1 (dff,)`, `W2 (dff, d_model)`, `b2 (d_model,)` (two `keras.layers.Dense`).

    Mistakes named: no ReLU, ReLU also on the output, another activation, a
    residual added, mixing positions.
    """
    sec = "(section 3.3)"
    rng = np.random.default_rng(3)
    layer = _make_layer(cls, d_model=d_model, dff=dff)
    x = rng.standard_normal((2, 5, d_model)).astype("float32")
    _run("layer(x)", layer, x)
    w1, b1, w2, b2 = _random_weights(rng, [(d_model, dff), (dff,), (dff, d_model), (d_model,)])
    b1 = b1 * 5  # a bias large enough for ReLU and GELU to differ
    _copy_weights(
        layer, [w1, b1, w2, b2], "the layer", "W1 (d_model, dff), b1 (dff,), W2 (dff, d_model), b2"
    )
    out = _array(_run("layer(x)", layer, x), "layer(x)")
    if out.shape != x.shape:
        _fail(f"layer(x) returned shape {out.shape}; expected {x.shape} {sec}")
    inner = x @ w1 + b1
    expected = np.maximum(inner, 0) @ w2 + b2
    if _close(out, expected):
        x_other = x.copy()
        x_other[:, 1:] = rng.standard_normal(x_other[:, 1:].shape)
        first = _array(_run("layer(x)", layer, x_other), "layer(x)")[:, 0]
        if not _close(first, out[:, 0]):
            _fail(
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
            _fail(f"layer(x): {mistake} {sec}")
    _fail(f"layer(x) differs from max(0, x W1 + b1) W2 + b2 ({_max_diff(out, expected)}) {sec}")


_ENCODER_LAYOUT = (
    "self-attention (query, key, value, output: kernel + bias each), its LayerNorm "
    "(gamma, beta), feed-forward (W1, b1, W2, b2), its LayerNorm (gamma, beta)"
)
_DECODER_LAYOUT = (
    "causal self-attention (query, key, value, output: kernel + bias each), its LayerNorm, "
    "cross-attention (the same 8 arrays), its LayerNorm, feed-forward (W1, b1, W2, b2), its LayerNorm"
)


def _np_sublayers(arrays, heads):
    """Splits the flat weight list into (mha weights, gamma, beta) blocks and an FFN block."""
    blocks, i = [], 0
    while len(arrays) - i > 6:
        blocks.append((arrays[i : i + 8], arrays[i + 8], arrays[i + 9]))
        i += 10
    return blocks, arrays[i : i + 4], arrays[i + 4], arrays[i + 5]


def _np_block(x, kv, mha_w, gamma, beta, heads, mask, pre_ln=False, residual=True):
    if pre_ln:
        h = _np_layer_norm(x, gamma, beta)
        kv = h if kv is x else kv
        return x + _np_mha(mha_w, heads, h, kv, mask=mask)
    out = _np_mha(mha_w, heads, x, kv, mask=mask)
    return _np_layer_norm(x + out if residual else out, gamma, beta)


def _np_ffn_block(x, ffn_w, gamma, beta, pre_ln=False, residual=True):
    w1, b1, w2, b2 = ffn_w
    if pre_ln:
        h = _np_layer_norm(x, gamma, beta)
        return x + np.maximum(h @ w1 + b1, 0) @ w2 + b2
    out = np.maximum(x @ w1 + b1, 0) @ w2 + b2
    return _np_layer_norm(x + out if residual else out, gamma, beta)


def _attention_mask(q_len, kv_padding, causal=False, batch=None):
    batch = batch if kv_padding is None else kv_padding.shape[0]
    kv_len = q_len if kv_padding is None else kv_padding.shape[1]
    mask = np.ones((batch, q_len, kv_len), bool)
    if kv_padding is not None:
        mask &= kv_padding[:, None, :]
    if causal:
        mask &= np.tril(np.ones((q_len, kv_len), bool))[None]
    return mask


def _layer_weights(reference_cls, rng, x, *args, **kwargs):
    """Builds the reference layer, fills it with random weights, returns it and them (2-D)."""
    reference = reference_cls(**kwargs)
    reference(x, *args)
    flat = []
    for variable in reference.trainable_weights:
        shape = tuple(variable.shape)
        if variable.path.endswith("gamma"):
            array = 1.0 + 0.2 * rng.standard_normal(shape)
        elif variable.path.endswith(("beta", "bias")):
            array = 0.1 * rng.standard_normal(shape)
        else:
            array = 0.4 * rng.standard_normal(shape)
        array = array.astype("float32")
        variable.assign(array)
        # the student's layout: kernels (d_in, d_out), biases (d_out,), row-major
        if array.ndim == 3 and variable.path.endswith("attention_output/kernel"):
            array = array.reshape(-1, shape[-1])  # (heads, d_head, d_model) -> (d_model, d_model)
        elif array.ndim == 3:
            array = array.reshape(shape[0], -1)  # (d_model, heads, d_head) -> (d_model, d_model)
        elif array.ndim == 2 and variable.path.endswith("bias"):
            array = array.reshape(-1)  # (heads, d_head) -> (d_model,)
        flat.append(array)
    return reference, flat


def check_encoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's encoder layer (section 3.1).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`
    called as `layer(x, padding_mask=None)`, `x` `(batch, seq_len, d_model)`,
    `padding_mask` boolean `(batch, seq_len)`, `True` = real token. It computes,
    post-LN as in the paper and without dropout at inference:
    `h = LayerNorm(x + MultiHead(x, x, x))` with padded keys masked out, then
    `out = LayerNorm(h + FFN(h))`, `(batch, seq_len, d_model)`. Its trainable
    weights, in creation order, follow `kt.layers.EncoderLayer`: self-attention
    (query, key, value, output projection, each kernel `(d_model, d_model)` and
    bias `(d_model,)`), LayerNorm (gamma, beta), FFN (`W1 (d_model, dff)`, `b1`,
    `W2 (dff, d_model)`, `b2`), LayerNorm (gamma, beta); any shape with the same
    number of entries is filled row-major (so Keras's `MultiHeadAttention`
    or `kt.layers.MultiHeadAttention` inside work too).

    Probes: the output against `kt.layers.EncoderLayer` with the same weights,
    padding invariance (extra padded positions change no real output), global
    attention (the first position sees the last). Mistakes named: pre-LN,
    missing residuals, padding mask ignored, a causal mask in the encoder.
    """
    sec = "(section 3.1)"
    rng = np.random.default_rng(4)
    layer = _make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = rng.standard_normal((2, 6, d_model)).astype("float32")
    padding = np.array([[True] * 6, [True] * 4 + [False] * 2])
    _run("layer(x)", layer, x)
    reference, arrays = _layer_weights(
        _layers.EncoderLayer, rng, x, num_heads=num_heads, dff=dff, dropout=0.0
    )
    _copy_weights(layer, arrays, "the encoder layer", _ENCODER_LAYOUT)

    def call(inputs, mask, what="layer(x, padding_mask=mask)"):
        out = _array(_run(what, layer, inputs, padding_mask=mask), what)
        if out.shape != inputs.shape:
            _fail(f"{what} returned shape {out.shape}; expected {inputs.shape} {sec}")
        return out

    out = call(x, padding)
    expected = _array(reference(x, padding_mask=padding), "reference")
    if not _close(out, expected, loose=True):
        (blocks, ffn, g2, b2) = _np_sublayers(arrays, num_heads)
        (mha, g1, b1) = blocks[0]

        def encoder(mask, **kw):
            h = _np_block(x, x, mha, g1, b1, num_heads, mask, **kw)
            return _np_ffn_block(h, ffn, g2, b2, **kw)

        full = _attention_mask(6, padding)
        for candidate, mistake in (
            (encoder(full, pre_ln=True), "pre-LN: the paper's layer is LayerNorm(x + sublayer(x)), the norm after the residual add"),
            (encoder(full, residual=False), "residual connections missing: LayerNorm(x + sublayer(x)), not LayerNorm(sublayer(x))"),
            (encoder(None), "padding_mask ignored: padded keys must get weight 0 in self-attention (section 3.2.3)"),
            (encoder(_attention_mask(6, padding, causal=True)), "a causal mask in the encoder: encoder self-attention sees every real position (section 3.2.3)"),
        ):  # fmt: skip
            if _close(out, candidate, loose=True):
                _fail(f"encoder layer: {mistake} {sec}")
        _fail(
            f"encoder layer differs from kt.layers.EncoderLayer with the same weights "
            f"({_max_diff(out, expected)}): self-attention, Add & Norm, feed-forward, Add & Norm {sec}"
        )
    # padding invariance: the second row again, its two pads replaced by junk
    junk = x.copy()
    junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
    if not _close(call(junk, padding)[1, :4], out[1, :4]):
        _fail(
            "padded positions change the real positions' outputs: mask padded keys (section 3.2.3)"
        )
    # global: the last real position influences the first one
    later = x.copy()
    later[0, 5] = rng.standard_normal(d_model) * 3
    if _close(call(later, padding)[0, 0], out[0, 0]):
        _fail(
            "the first position does not see the last: encoder self-attention is global (section 3.2.3)"
        )
    return None


def check_decoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's decoder layer (section 3.1, attention uses of section 3.2.3).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`
    called as `layer(x, context, padding_mask=None, context_padding_mask=None)`,
    `x` `(batch, tgt_len, d_model)`, `context` (the encoder output)
    `(batch, src_len, d_model)`, the masks boolean `(batch, tgt_len)` and
    `(batch, src_len)`, `True` = real token. Post-LN, no dropout at inference:
    `h1 = LayerNorm(x + MultiHead(x, x, x))` with a causal mask (position t sees
    positions <= t) and padded target keys masked,
    `h2 = LayerNorm(h1 + MultiHead(h1, context, context))` with padded source keys
    masked, `out = LayerNorm(h2 + FFN(h2))`, `(batch, tgt_len, d_model)`.
    Trainable weights, in creation order, follow `kt.layers.DecoderLayer`:
    self-attention (4 kernels `(d_model, d_model)` + 4 biases), LayerNorm,
    cross-attention (same), LayerNorm, FFN (`W1`, `b1`, `W2`, `b2`), LayerNorm;
    any shape with the same number of entries is filled row-major.

    Probes: against `kt.layers.DecoderLayer` with the same weights; causality
    (changing later target positions changes no earlier output); the context
    matters; padded source positions change nothing. Mistakes named: no causal
    mask, cross-attention before self-attention, queries taken from the context,
    pre-LN, context padding ignored.
    """
    sec = "(section 3.2.3)"
    rng = np.random.default_rng(5)
    layer = _make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = rng.standard_normal((2, 4, d_model)).astype("float32")
    context = rng.standard_normal((2, 6, d_model)).astype("float32")
    tgt_pad = np.ones((2, 4), bool)
    src_pad = np.array([[True] * 6, [True] * 4 + [False] * 2])
    _run("layer(x, context)", layer, x, context)
    reference, arrays = _layer_weights(
        _layers.DecoderLayer, rng, x, context, num_heads=num_heads, dff=dff, dropout=0.0
    )
    _copy_weights(layer, arrays, "the decoder layer", _DECODER_LAYOUT)

    def call(inputs, ctx, what="layer(x, context, padding_mask, context_padding_mask)"):
        out = _run(what, layer, inputs, ctx, padding_mask=tgt_pad, context_padding_mask=src_pad)
        out = _array(out, what)
        if out.shape != inputs.shape:
            _fail(
                f"{what} returned shape {out.shape}; expected (batch, tgt_len, d_model) = {inputs.shape} {sec}"
            )
        return out

    out = call(x, context)
    expected = _array(
        reference(x, context, padding_mask=tgt_pad, context_padding_mask=src_pad), "reference"
    )
    # Causality first: the most common decoder mistake, and the clearest message.
    later = x.copy()
    later[:, -1] = rng.standard_normal((2, d_model)) * 5
    if not _close(call(later, context)[:, :-1], out[:, :-1]):
        _fail(
            "not causal: changing the last target position changes earlier outputs; "
            f"mask the decoder self-attention so position t sees only positions <= t {sec}"
        )
    if not _close(out, expected, loose=True):
        blocks, ffn, g3, b3 = _np_sublayers(arrays, num_heads)
        (self_w, g1, b1), (cross_w, g2, b2) = blocks
        causal = _attention_mask(4, tgt_pad, causal=True)
        cross = _attention_mask(4, src_pad)

        def decoder(self_first=True, cross_mask=cross, pre_ln=False):
            if self_first:
                h = _np_block(x, x, self_w, g1, b1, num_heads, causal, pre_ln=pre_ln)
                h = _np_block(h, context, cross_w, g2, b2, num_heads, cross_mask, pre_ln=pre_ln)
            else:
                h = _np_block(x, context, self_w, g1, b1, num_heads, cross_mask)
                h = _np_block(h, h, cross_w, g2, b2, num_heads, causal)
            return _np_ffn_block(h, ffn, g3, b3, pre_ln=pre_ln)

        for candidate, mistake in (
            (decoder(self_first=False), "cross-attention before self-attention: the decoder layer runs causal self-attention, then cross-attention, then the feed-forward network"),
            (decoder(pre_ln=True), "pre-LN: the paper's layer is LayerNorm(x + sublayer(x)) (section 3.1)"),
            (decoder(cross_mask=None), "context_padding_mask ignored: padded source positions must get weight 0 in cross-attention"),
        ):  # fmt: skip
            if _close(out, candidate, loose=True):
                _fail(f"decoder layer: {mistake} {sec}")
        _fail(
            f"decoder layer differs from kt.layers.DecoderLayer with the same weights "
            f"({_max_diff(out, expected)}): causal self-attention, Add & Norm, cross-attention "
            f"(queries from x, keys and values from the context), Add & Norm, feed-forward, Add & Norm {sec}"
        )
    other = context.copy()
    other[:, 0] = rng.standard_normal((2, d_model)) * 3
    if _close(call(x, other), out):
        _fail(
            f"the output does not depend on the context: cross-attention must read the encoder output {sec}"
        )
    junk = context.copy()
    junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
    if not _close(call(x, junk)[1], out[1]):
        _fail(f"padded source positions change the output: mask them in cross-attention {sec}")
    return None


def _np_token_losses(labels, logits, label_smoothing=0.0):
    log_p = logits - logits.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]
    if label_smoothing:
        nll = (1 - label_smoothing) * nll + label_smoothing * (-log_p.mean(-1))
    return nll  # (batch, seq_len)


def check_masked_loss(fn) -> None:
    """Checks a student's masked token cross-entropy (the training objective, section 5).

    Contract: `fn(labels, logits)` with int `labels` `(batch, seq_len)`, 0 =
    padding, and float `logits` `(batch, seq_len, vocab_size)` (before the
    softmax) returns a scalar: the cross-entropy `-log softmax(logits)[label]`
    summed over the tokens whose label is not 0 and divided by their number (a
    mean over real tokens, not a mean of per-sentence means, not diluted by
    padding), the value of the package's `MaskedSparseCategoricalCrossentropy`.
    If `fn` also takes `label_smoothing`, `fn(labels, logits, label_smoothing=0.1)`
    must give the smoothed loss of section 5.4 with the Keras convention: target
    `(1 - eps) * one_hot + eps / vocab_size`.

    Mistakes named: padding counted, dividing by all positions, a mean of
    per-sentence means, logits read as probabilities, a sum instead of a mean,
    padding logits changing the loss.
    """
    sec = "(section 5)"
    rng = np.random.default_rng(6)
    labels = np.array([[5, 3, 7, 2, 0, 0], [4, 1, 0, 0, 0, 0], [6, 6, 2, 8, 9, 1]], "int32")
    logits = (2.0 * rng.standard_normal((3, 6, 10))).astype("float32")
    what = "fn(labels, logits)"

    def call(y, z, **kwargs):
        value = _array(_run(what, fn, y, z, **kwargs), what)
        if value.size != 1:
            _fail(
                f"{what} returned shape {value.shape}; expected a scalar (the mean over real tokens) {sec}"
            )
        return float(value.reshape(()))

    loss = call(labels, logits)
    token = _np_token_losses(labels, logits.astype("float64"))
    real = labels != 0
    expected = token[real].mean()
    if not np.isclose(loss, expected, rtol=1e-3, atol=1e-4):
        probs = np.clip(logits / logits.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
        for candidate, mistake in (
            (token.mean(), "padding counted: average only over the tokens whose label is not 0"),
            (token[real].sum() / labels.size, "divided by all positions; divide by the number of real tokens"),
            (np.mean([token[i][real[i]].mean() for i in range(3)]), "a mean of per-sentence means; average over all real tokens of the batch"),
            (token[real].sum(), "a sum, not a mean over the real tokens"),
            (-np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])[real].mean(), "logits read as probabilities: apply the softmax (from_logits=True)"),
        ):  # fmt: skip
            if np.isclose(loss, candidate, rtol=1e-3, atol=1e-4):
                _fail(f"{what}: {mistake} {sec}")
        _fail(
            f"{what} = {loss:.5f}; the mean cross-entropy over real tokens is {expected:.5f} {sec}"
        )
    junk = logits.copy()
    junk[~real] = rng.standard_normal(junk[~real].shape) * 10
    if not np.isclose(call(labels, junk), loss, rtol=1e-4, atol=1e-5):
        _fail(f"the logits at padded positions change the loss; they must not count {sec}")
    try:
        takes_smoothing = "label_smoothing" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        takes_smoothing = False
    if takes_smoothing:
        smoothed = call(labels, logits, label_smoothing=0.1)
        want = _np_token_losses(labels, logits.astype("float64"), 0.1)[real].mean()
        if not np.isclose(smoothed, want, rtol=1e-3, atol=1e-4):
            _fail(
                f"fn(labels, logits, label_smoothing=0.1) = {smoothed:.5f}; expected {want:.5f}: "
                "target (1 - eps) * one_hot + eps / vocab_size (section 5.4)"
            )
    return None


EXERCISE_TAG = "exercise"
CHECKER_TAG = "checker"


def student_version(source: str) -> str:
    """The student version of an exercise cell: every body becomes `raise NotImplementedError`.

    Each top-level function, and each method of each top-level class, keeps its
    decorators, signature and docstring; the rest of its body is replaced by
    `raise NotImplementedError("...")` naming what to write. Other statements
    of the cell (imports, constants) stay as they are.

    Args:
        source: the Python source of the exercise cell (IPython magics aside).

    Returns:
        The source with the bodies removed.

    Example:
    >>> print(student_version("def double(x):\\n    return 2 * x\\n"), end="")
    def double(x):
        raise NotImplementedError("exercise: write double")
    """
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise ValueError(f"exercise cell is not valid Python ({error}); fix the cell") from None
    functions = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append((node, node.name))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.append((item, f"{node.name}.{item.name}"))
    if not functions:
        raise ValueError("exercise cell defines no function or class; tag only cells that do")
    lines = source.splitlines()
    for node, name in sorted(functions, key=lambda pair: -pair[0].lineno):
        body = node.body
        has_doc = (
            isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        )
        first = body[1] if has_doc and len(body) > 1 else (None if has_doc else body[0])
        indent = " " * (body[0].col_offset)
        stub = f'{indent}raise NotImplementedError("exercise: write {name}")'
        if first is None:  # a docstring only
            lines.insert(body[0].end_lineno, stub)
            continue
        lines[first.lineno - 1 : node.end_lineno] = [stub]
    return "\n".join(lines) + "\n"
