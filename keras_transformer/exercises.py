"""Checkers for the pieces of the Transformer a student writes (coursework).

Each checker runs the student's function or Keras `Layer` class on small float32
batches next to `kt.layers` (same weights copied in), probes masking, causality,
padding invariance and scaling, and returns `None` or raises `AssertionError`
naming the mistake and the section of the paper to re-read. Its docstring states
the contract (calls, shapes, weights); the student's code may return NumPy or tensors.

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
>>> exercises.check_scaled_dot_product_attention(attention)  # silent: no mistake found
"""

import functools
import inspect
import itertools
import math
import re

import keras
import numpy as np

from keras_transformer import layers as _layers

__all__ = [
    "check_add_norm",
    "check_decoder_layer",
    "check_encoder_layer",
    "check_feed_forward",
    "check_functional_transformer",
    "check_masked_loss",
    "check_multi_head_attention",
    "check_positional_encoding",
    "check_scaled_dot_product_attention",
]


def _fail(message: str):
    raise AssertionError(message) from None


def _student_facing(check):
    """Re-raises the checker's AssertionError without the checker's own frames or the chained
    exception: a student's traceback ends at the line that called the checker."""

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except AssertionError as error:
            message = str(error)
        raise AssertionError(message) from None

    return wrapper


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MATMUL_T = (
    "; transposing a batched key with `.T` reverses every axis ((batch, len, d) -> "
    "(d, len, batch)): swap only the last two, `np.swapaxes(key, -1, -2)` or "
    "`key.transpose(0, 2, 1)`"
)


def _informative_line(error: Exception) -> str:
    """The line of an exception's message that says what went wrong.

    Keras wraps an error raised inside a layer as "Exception encountered when calling
    X.call().", the cause a few lines below and "Arguments received by ..." after it.
    """
    lines = [line.strip() for line in _ANSI.sub("", str(error)).splitlines() if line.strip()]
    if lines and lines[0].startswith("Exception encountered when calling"):
        where = lines[0].removeprefix("Exception encountered when calling").strip(" .")
        for line in lines[1:]:
            if line.startswith("Arguments received by"):
                break
            return f"{line} (in {where})"
    return lines[0] if lines else ""


def _run(what: str, fn, *args, **kwargs):
    """Calls the student's code; its exceptions become one readable AssertionError."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        _fail(f"{what} is not implemented yet: it raised NotImplementedError")
    except AssertionError:
        raise
    except Exception as error:  # the student's bug, reported, not a crash of the checker
        message = _informative_line(error)[:400]
        if "matmul" in message and "mismatch in its core dimension" in message:
            message += _MATMUL_T
        _fail(f"{what} raised {type(error).__name__}: {message}")


def _array(x, what: str) -> np.ndarray:
    try:
        return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")
    except Exception as error:
        _fail(f"{what} is not an array or tensor of numbers ({type(x).__name__}: {error})")


def _close(a, b, loose=False) -> bool:
    """Equal up to float32 round-off (`loose`: up to a LayerNorm epsilon of 1e-3)."""
    rtol, atol = (1e-2, 3e-3) if loose else (1e-3, 1e-4)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def _max_diff(a, b) -> str:
    return f"largest difference {np.max(np.abs(a - b)):.3g}"


def _np_attention(q, k, v, mask=None, scale="sqrt", axis=-1, invert_mask=False):
    """softmax(q k^T * scale) v in NumPy, with the mistakes the checkers diagnose."""
    d_k = q.shape[-1]
    factor = {"sqrt": 1 / np.sqrt(d_k), "none": 1.0, "d": 1 / d_k, "times_sqrt": np.sqrt(d_k)}
    factor = factor[scale] if isinstance(scale, str) else scale
    scores = q @ np.swapaxes(k, -1, -2) * factor  # (..., q_len, kv_len)
    if mask is not None:
        mask = np.logical_not(mask) if invert_mask else np.asarray(mask, bool)
        scores = np.where(mask, scores, -1e9)
    weights = np.exp(scores - scores.max(axis=axis, keepdims=True))
    weights = weights / weights.sum(axis=axis, keepdims=True)
    return weights @ v, weights


def _split(x, heads, how):
    b, length, d = x.shape
    if how == "no_transpose":  # (batch, len, d) read as (batch, heads, len, d_head)
        return x.reshape(b, heads, length, d // heads)
    if how == "strided":  # head i takes columns i, i + heads, ...
        return x.reshape(b, length, d // heads, heads).transpose(0, 3, 1, 2)
    return x.reshape(b, length, heads, d // heads).transpose(0, 2, 1, 3)


def _merge(x, how):
    b, heads, length, dh = x.shape
    if how == "no_transpose":
        return x.reshape(b, length, heads * dh)
    order = (0, 2, 3, 1) if how == "strided" else (0, 2, 1, 3)
    return x.transpose(order).reshape(b, length, heads * dh)


def _np_mha(weights, heads, query, value, key=None, mask=None, **variant):
    """Multi-head attention in NumPy from 2-D kernels; `variant` switches in one mistake."""
    wq, bq, wk, bk, wv, bv, wo, bo = weights
    key = value if key is None else key
    if variant.get("swap_key_value"):
        key, value = value, key
    split = variant.get("split", "heads")
    q = _split(query @ wq + bq, heads, split)  # (batch, heads, q_len, d_head)
    k = _split(key @ wk + bk, heads, split)  # (batch, heads, kv_len, d_head)
    v = _split(value @ wv + bv, heads, split)
    if mask is not None:
        mask = np.asarray(mask, bool)[:, None]  # (batch, 1, q_len, kv_len)
    options = {name: variant[name] for name in ("scale", "axis", "invert_mask") if name in variant}
    out, _ = _np_attention(q, k, v, mask, **options)
    out = _merge(out, variant.get("merge", "heads"))  # (batch, q_len, d_model)
    return out if variant.get("no_output_projection") else out @ wo + bo


def _np_layer_norm(x, gamma, beta, axis=-1):
    centred = x - x.mean(axis=axis, keepdims=True)
    return centred / np.sqrt(x.var(axis=axis, keepdims=True) + 1e-6) * gamma + beta


def _output(what: str, value, shape, sec: str, axes: str = "") -> np.ndarray:
    """The student's `value` as an array; fails unless its shape is `shape`."""
    out = _array(value, what)
    if out.shape != shape:
        _fail(f"{what} returned shape {out.shape}; expected {axes}{shape} {sec}")
    return out


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
    if [int(np.prod(f)) for f in found] != [int(np.prod(e)) for e in expected]:
        unused = [
            f"self.{name} ({type(sub).__name__})"
            for name, sub in vars(layer).items()
            if isinstance(sub, keras.layers.Layer) and not sub.built
        ]
        if unused and len(variables) < len(arrays):
            _fail(
                f"{what} creates {', '.join(unused)} but never calls it in call(), so it has "
                f"no weights ({len(variables)} trainable weights found, {len(arrays)} expected: "
                f"{layout}); apply it where the paper does"
            )
        _fail(
            f"{what} should hold {len(arrays)} trainable weights, in creation order: {layout}, "
            f"shapes {expected}; found {len(variables)}: {found}"
        )
    for variable, array in zip(variables, arrays, strict=True):
        variable.assign(np.reshape(array, variable.shape).astype(variable.dtype))


def _random_weights(rng, shapes):
    """float32 normals: kernels times 0.4, biases (1-D) times 0.1."""
    return [
        (rng.standard_normal(s) * (0.4 if len(s) > 1 else 0.1)).astype("float32") for s in shapes
    ]


@_student_facing
def check_scaled_dot_product_attention(fn) -> None:
    """Checks a student's scaled dot-product attention (section 3.2.1 of the paper).

    Contract: `fn(query, key, value, mask=None) -> (output, weights)`, query
    `(..., q_len, d_k)`, key `(..., kv_len, d_k)`, value `(..., kv_len, d_v)`,
    boolean `mask` (`True` = may attend) broadcastable to `(..., q_len, kv_len)`;
    `weights = softmax(query key^T / sqrt(d_k))` over the keys, masked keys at 0,
    `output = weights value`. Probes: shapes, softmax axis, scaling, masks
    `(batch, q_len, kv_len)`, `(batch, 1, kv_len)`, causal `(q_len, kv_len)`,
    polarity, padded keys, 4-D inputs `(batch, heads, len, d)`, a fully masked row
    (any finite output; NaN from `-inf` masking is named).
    """
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 3, 16)).astype("float32")
    k = rng.standard_normal((2, 5, 16)).astype("float32")
    v = rng.standard_normal((2, 5, 6)).astype("float32")
    sec = "(section 3.2.1 of the paper)"

    def call(query, key, value, mask=None, what="fn(query, key, value)"):
        result = _run(what, fn, query, key, value, mask=mask)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            _fail(f"{what} must return a pair (output, weights); got {type(result).__name__}")
        out, w = (_array(r, what) for r in result)
        batch_dims = query.shape[:-2]
        want_w = (*batch_dims, query.shape[-2], key.shape[-2])
        want_o = (*batch_dims, query.shape[-2], value.shape[-1])
        if w.shape != want_w:
            if w.shape == (*batch_dims, key.shape[-2], query.shape[-2]):
                _fail(
                    f"weights have shape {w.shape}, (..., kv_len, q_len): transposed; "
                    f"compute query @ key^T so they are (..., q_len, kv_len) = {want_w} {sec}"
                )
            _fail(f"weights have shape {w.shape}; expected (..., q_len, kv_len) = {want_w} {sec}")
        if out.shape != want_o:
            _fail(f"output has shape {out.shape}; expected (..., q_len, d_v) = {want_o} {sec}")
        return out, w

    def reference(query, key, value, mask=None):
        out, w = _layers.scaled_dot_product_attention(query, key, value, mask=mask)
        return _array(out, "reference"), _array(w, "reference")

    # 1. No mask: normalization axis, scaling, output.
    out, w = call(q, k, v)
    if not np.allclose(w.sum(-1), 1.0, atol=1e-3):
        if np.allclose(w.sum(-2), 1.0, atol=1e-3):
            _fail(
                "weights do not sum to 1 over the keys: softmax over the wrong axis "
                f"(the queries)? Take the softmax over the last axis, kv_len {sec}"
            )
        _fail(f"weights do not sum to 1 over the keys: is the softmax missing? {sec}")
    ref_out, ref_w = reference(q, k, v)
    if not _close(w, ref_w):
        for scale, mistake in {
            "none": "the scores are not scaled: divide query @ key^T by sqrt(d_k)",
            "d": "the scores are divided by d_k; divide by sqrt(d_k)",
            "times_sqrt": "the scores are multiplied by sqrt(d_k); divide by it",
            1 / np.sqrt(v.shape[-1]): "the scores are divided by sqrt(d_v); d_k is the "
            "query/key size",
        }.items():
            if _close(w, _np_attention(q, k, v, scale=scale)[1]):
                _fail(f"{mistake} {sec}")
        _fail(f"weights differ from softmax(query key^T / sqrt(d_k)) ({_max_diff(w, ref_w)}) {sec}")
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
    leaked = np.abs(w_b[np.broadcast_to(~padding, w_b.shape)]).max()
    if not _close(out_b, reference(q, k, v, padding)[0]) or leaked > 1e-6:
        _fail(f"a padding mask of shape (batch, 1, kv_len) is not broadcast over the queries {sec}")
    x = rng.standard_normal((2, 4, 16)).astype("float32")
    causal = np.tril(np.ones((4, 4), bool))
    out_c, w_c = call(x, x, x, causal, what="fn(x, x, x, mask=causal) with a (q_len, kv_len) mask")
    if np.abs(w_c[:, ~causal]).max() > 1e-6:
        _fail(
            f"causal mask: a query attends to a later position (section 3.2.3 of the paper, {sec[1:-1]})"
        )
    ref_c, _ = reference(x, x, x, causal)
    if not _close(out_c, ref_c):
        _fail(f"causal self-attention differs from the reference ({_max_diff(out_c, ref_c)}) {sec}")
    # 5. Leading axes (batch, heads, ...): multi-head attention calls it on 4-D tensors.
    q4 = rng.standard_normal((2, 2, 3, 8)).astype("float32")
    k4 = rng.standard_normal((2, 2, 5, 8)).astype("float32")
    v4 = rng.standard_normal((2, 2, 5, 4)).astype("float32")
    out4, _ = call(q4, k4, v4, what="fn on 4-D inputs (batch, heads, len, d)")
    if not _close(out4, reference(q4, k4, v4)[0]):
        _fail(
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
        _fail(
            "a fully masked row (a query whose mask is False for every key, as a padded query's "
            "row is) gives NaN: filling the masked scores with -inf makes that row's softmax "
            "exp(-inf) / sum(exp(-inf)) = 0/0, and the NaN spreads to every position that "
            "reads it; fill with a large finite negative number (-1e9, or the dtype's minimum) "
            f"so the row stays finite {sec}"
        )
    others = np.ones((2, 3), bool)
    others[0, 1] = False
    if not _close(out_f[others], out_m[others]):
        _fail(f"masking one query's row fully changes the other queries' outputs {sec}")


def _pe_table(length, depth, mistake=None):
    """The paper's positional-encoding table, or the one a key of `_PE_MISTAKES` gives."""
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


_PE_MISTAKES = {
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


@_student_facing
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
        table = _array(_run(what, fn, length, depth), what)
        if table.shape != shape:
            if table.shape == (depth, length):
                _fail(f"{what} has shape {table.shape}: transposed; return (length, depth) {sec}")
            _fail(f"{what} has shape {table.shape}; expected (length, depth) = {shape} {sec}")
        expected = _pe_table(length, depth)
        if np.allclose(table, expected, atol=1e-4):
            continue
        for mistake, message in _PE_MISTAKES.items():
            if np.allclose(table, _pe_table(length, depth, mistake), atol=1e-4):
                _fail(f"{what}: {message} {sec}")
        if not np.allclose(table[0], np.arange(depth) % 2, atol=1e-4):  # sin 0 = 0, cos 0 = 1
            _fail(
                f"{what}: at pos = 0 the even columns (sines) must be 0 and the odd ones "
                f"(cosines) 1; got {np.round(table[0, :6], 3).tolist()}... {sec}"
            )
        column = int(np.flatnonzero(~np.isclose(table, expected, atol=1e-4).all(axis=0))[0])
        _fail(
            f"{what}: column {column} differs from {'sin' if column % 2 == 0 else 'cos'}"
            f"(pos / 10000^({column - column % 2}/{depth})) "
            f"({_max_diff(table[:, column], expected[:, column])}); check the frequencies {sec}"
        )


_MHA_LAYOUT = (
    "query, key, value and output projections, each a kernel (d_model, d_model) and a "
    "bias (d_model,) (four keras.layers.Dense(d_model))"
)


def _mha_diagnose(student, weights, heads, query, value, key=None, attention_mask=None):
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
    mistakes = {  # (option, value, ...) of _np_mha -> the mistake it reproduces
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
        "(section 3.2.3 of the paper)",
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
        if options[0] == "invert_mask" and mask is None:
            continue
        variant = dict(zip(options[::2], options[1::2], strict=True))
        if _close(student, _np_mha(weights, heads, query, value, key, mask, **variant)):
            return mistake
    if mask is not None and _close(student, _np_mha(weights, heads, query, value, key)):
        return "attention_mask is ignored: keys where it is False must get weight 0 (section 3.2.3 of the paper)"
    return None


@_student_facing
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
    Mistakes named: scaling, softmax axis, mask polarity, head split and merge,
    key/value swapped, no output projection, masked keys or later positions
    changing the output. `d_model`, `num_heads`: probe sizes (d_head = 8 tells
    d_head, sqrt(d_head) and sqrt(d_model) apart).
    """
    sec = "(section 3.2.2 of the paper)"
    rng = np.random.default_rng(1)
    b, q_len, kv_len = 2, 3, 5
    layer = _make_layer(cls, d_model=d_model, num_heads=num_heads)
    xq = rng.standard_normal((b, q_len, d_model)).astype("float32")
    xv = rng.standard_normal((b, kv_len, d_model)).astype("float32")
    xk = rng.standard_normal((b, kv_len, d_model)).astype("float32")

    def call(*args, what="layer(query, value)", **kwargs):
        out = _run(what, layer, *args, **kwargs)
        want = (args[0].shape[0], args[0].shape[1], d_model)
        return _output(what, out, want, sec, "(batch, q_len, d_model) = ")

    call(xq, xv)  # creates the weights of a layer without build()
    weights = _random_weights(rng, [(d_model, d_model), (d_model,)] * 4)
    _copy_weights(layer, weights, "the layer", _MHA_LAYOUT)
    reference = _layers.MultiHeadAttention(num_heads=num_heads, key_dim=d_model // num_heads)
    reference(xq, xv)
    _copy_weights(reference, weights, "reference", _MHA_LAYOUT)

    def compare(student, what, query, value, **kwargs):
        expected = _array(reference(query, value, **kwargs), "reference")
        if _close(student, expected):
            return
        mistake = _mha_diagnose(student, weights, num_heads, query, value, **kwargs)
        if mistake:
            _fail(f"{what}: {mistake}")
        _fail(
            f"{what} differs from multi-head attention with the same weights "
            f"({_max_diff(student, expected)}): check the projections (query, key, value, output, "
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
    if not _close(padded, masked):
        _fail(
            "keys where attention_mask is False change the output: padded keys must get "
            f"weight 0 ({_max_diff(padded, masked)}) (section 3.2.3 of the paper)"
        )

    x = rng.standard_normal((b, 4, d_model)).astype("float32")
    causal = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (b, 4, 4))
    what = "layer(x, x, attention_mask=causal)"
    out_c = call(x, x, attention_mask=causal, what=what)
    x_later = x.copy()
    x_later[:, -1] = rng.standard_normal((b, d_model)) * 5
    if not _close(out_c[:, :-1], call(x_later, x_later, attention_mask=causal, what=what)[:, :-1]):
        _fail(
            "with a causal mask, changing the last position changes the outputs of earlier "
            "positions: masked keys must get weight 0 (section 3.2.3 of the paper)"
        )
    compare(out_c, "causal self-attention", x, x, attention_mask=causal)


@_student_facing
def check_add_norm(cls, d_model: int = 8) -> None:
    """Checks a student's residual connection + layer normalization (section 3.1 of the paper).

    Contract: `cls()` is a `keras.layers.Layer`; `layer(x, sublayer_output)`, both
    `(batch, seq_len, d_model)`, returns `LayerNorm(x + sublayer_output)` (post-LN)
    over the last axis; its only trainable weights are `gamma (d_model,)`, `beta
    (d_model,)` (a `keras.layers.LayerNormalization`, epsilon up to 1e-3).
    Mistakes named: no residual, pre-LN, `LayerNorm(x) + sublayer_output`, no
    normalization, the wrong axis.
    """
    sec = "(section 3.1 of the paper)"
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
    gamma = (1.0 + 0.2 * rng.standard_normal(d_model)).astype("float32")
    beta = (0.1 * rng.standard_normal(d_model)).astype("float32")
    _copy_weights(layer, [gamma, beta], "the layer", "the layer normalization's gamma and beta")
    out = _output(what, _run(what, layer, x, sub), x.shape, sec)
    reference = _layers.AddNorm()
    reference(x, sub)
    _copy_weights(reference, [gamma, beta], "reference", "gamma, beta")
    expected = _array(reference(x, sub), "reference")
    if np.allclose(out, expected, rtol=1e-2, atol=2e-3):
        return None
    ln = _np_layer_norm
    for candidate, mistake in (
        (
            ln(sub, gamma, beta),
            "no residual: normalize x + sublayer_output, not sublayer_output alone",
        ),
        (
            x + ln(sub, gamma, beta),
            "pre-LN: the paper normalizes after the residual add, LayerNorm(x + sublayer_output)",
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
            _fail(f"{what}: {mistake} {sec}")
    _fail(f"{what} differs from LayerNorm(x + sublayer_output) ({_max_diff(out, expected)}) {sec}")


@_student_facing
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
    layer = _make_layer(cls, d_model=d_model, dff=dff)
    x = rng.standard_normal((2, 5, d_model)).astype("float32")
    _run("layer(x)", layer, x)
    w1, b1, w2, b2 = _random_weights(rng, [(d_model, dff), (dff,), (dff, d_model), (d_model,)])
    b1 = b1 * 5  # a bias large enough for ReLU and GELU to differ
    layout = "W1 (d_model, dff), b1 (dff,), W2 (dff, d_model), b2"
    _copy_weights(layer, [w1, b1, w2, b2], "the layer", layout)
    out = _output("layer(x)", _run("layer(x)", layer, x), x.shape, sec)
    inner = x @ w1 + b1
    expected = np.maximum(inner, 0) @ w2 + b2
    if _close(out, expected):
        x_other = x.copy()
        x_other[:, 1:] = rng.standard_normal(x_other[:, 1:].shape)
        if not _close(_array(_run("layer(x)", layer, x_other), "layer(x)")[:, 0], out[:, 0]):
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


def _np_gelu(x):
    """GELU with erf (Keras's default); the tanh approximation is within the loose tolerance."""
    erf = np.vectorize(math.erf, otypes=[float])
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def _np_ffn(x, w1, b1, w2, b2, activation="relu"):
    """The position-wise feed-forward network; `activation` "relu" (the paper), "none", "gelu"."""
    inner = x @ w1 + b1  # (batch, len, dff)
    if activation == "relu":
        inner = np.maximum(inner, 0)
    elif activation == "gelu":
        inner = _np_gelu(inner)
    return inner @ w2 + b2


# How a sub-layer F joins its input x: the paper's post-LN, LayerNorm(x + F(x)), or a mistake.
_WIRINGS = ("post", "no_residual", "pre_ln", "norm_plus", "no_norm")


def _wire(how, x, f, gamma, beta):
    def norm(t):
        return _np_layer_norm(t, gamma, beta)

    if how == "post":
        return norm(x + f(x))
    if how == "no_residual":
        return norm(f(x))
    if how == "pre_ln":
        return x + f(norm(x))
    if how == "norm_plus":
        return norm(x) + f(x)
    return x + f(x)  # "no_norm"


_WIRING_TEXT = {  # how: (the mistake, what the sub-layer computes then)
    "no_residual": ("residual missing", "LayerNorm({sub}(x))"),
    "pre_ln": ("pre-LN", "x + {sub}(LayerNorm(x)), the norm before the sub-layer"),
    "norm_plus": ("LayerNorm(x) + {sub}(x)", "the input normalized, then added"),
    "no_norm": ("no LayerNorm after the residual add", "x + {sub}(x)"),
}


def _wiring_mistake(how, name, sub):
    """What `_wire(how, ...)` does wrong, for the sub-layer `name` computing `sub`(x)."""
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
    single = [correct[:i] + (how,) + correct[i + 1 :] for i in range(count) for how in _WIRINGS[1:]]
    same = [(how,) * count for how in _WIRINGS[1:]]
    rest = [w for w in itertools.product(_WIRINGS, repeat=count) if w != correct]
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


def _attention_mask(q_len, kv_padding, causal=False):
    mask = np.repeat(kv_padding[:, None, :], q_len, axis=1)  # (batch, q_len, kv_len)
    if causal:
        mask &= np.tril(np.ones(mask.shape[1:], bool))
    return mask


def _close_on(a, b, rows, loose=True) -> bool:
    """`_close` on the positions `rows` (batch, len) only."""
    return a.shape == b.shape and bool(rows.any()) and _close(a[rows], b[rows], loose)


def _diagnose(out, candidates, real):
    """The message of the first candidate equal to `out` at every position, else of the first
    equal to it at the real positions where `out` is finite (padded positions may differ)."""
    candidates = list(candidates)
    for candidate, message in candidates:
        if _close(out, candidate, loose=True):
            return message
    rows = real & np.isfinite(out).all(-1)
    for candidate, message in candidates:
        if _close_on(out, candidate, rows):
            return message
    return None


def _positions(rows) -> str:
    """'sentence 1, positions 4, 5' for a boolean (batch, len)."""
    return "; ".join(
        f"sentence {b}, position{'s' if row.sum() > 1 else ''} "
        f"{', '.join(str(i) for i in np.flatnonzero(row))}"
        for b, row in enumerate(rows)
        if row.any()
    )


_NAN_CAUSE = (
    "filling masked scores with -inf makes a fully masked row's softmax 0/0; fill with a large "
    "finite negative number (-1e9) or mask only the keys"
)


def _layer_weights(reference, rng, *inputs):
    """Builds `reference` on `inputs`, fills it with random weights, returns them (2-D)."""
    reference(*inputs)
    flat = []
    for variable in reference.trainable_weights:
        shape, gamma = tuple(variable.shape), variable.path.endswith("gamma")
        scale = 0.2 if gamma else 0.1 if variable.path.endswith(("beta", "bias")) else 0.4
        array = (gamma + scale * rng.standard_normal(shape)).astype("float32")  # gamma about 1
        variable.assign(array)
        # the student's layout: kernels (d_in, d_out), biases (d_out,), row-major
        if array.ndim == 3 and variable.path.endswith("attention_output/kernel"):
            array = array.reshape(-1, shape[-1])  # (heads, d_head, d_model) -> (d_model, d_model)
        elif array.ndim == 3:
            array = array.reshape(shape[0], -1)  # (d_model, heads, d_head) -> (d_model, d_model)
        elif array.ndim == 2 and variable.path.endswith("bias"):
            array = array.reshape(-1)  # (heads, d_head) -> (d_model,)
        flat.append(array)
    return flat


_ENCODER_RIGHT = (
    "the paper's layer is h = LayerNorm(x + MultiHead(x, x, x)) with padded keys masked, "
    "out = LayerNorm(h + FFN(h)), FFN(h) = max(0, h W1 + b1) W2 + b2"
)


def _encoder_candidates(x, arrays, heads, padding):
    """(output, mistake) pairs: the encoder layer computed in NumPy with one known mistake."""
    mha, (g1, b1), ffn, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:14], arrays[14:]
    length = x.shape[1]
    keys = _attention_mask(length, padding)  # the paper: padded keys hidden from every query

    def attention(mask):
        return lambda t: _np_mha(mha, heads, t, t, mask=mask)

    def feed(activation="relu"):
        return lambda t: _np_ffn(t, *ffn, activation)

    def encoder(mask=keys, activation="relu"):
        h = _wire("post", x, attention(mask), g1, b1)
        return _wire("post", h, feed(activation), g2, b2)

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
    yield (
        encoder(keys & np.tril(np.ones((length, length), bool))),
        f"a causal mask in the encoder: encoder self-attention sees every real position {sec}",
    )

    def wired(wirings):
        h = _wire(wirings[0], x, attention(keys), g1, b1)
        return _wire(wirings[1], h, feed(), g2, b2)

    yield from _wiring_candidates(
        wired, [("self-attention sub-layer", "MultiHead"), ("feed-forward sub-layer", "FFN")]
    )
    h = _wire("post", x, attention(keys), g1, b1)
    a = attention(keys)(x)
    yield (
        _np_layer_norm(x + feed()(h), g2, b2),
        "the feed-forward residual adds the layer input x; it adds the feed-forward "
        "sub-layer's own input h = LayerNorm(x + MultiHead(x, x, x)): LayerNorm(h + FFN(h))",
    )
    yield (
        _np_layer_norm(x + a + feed()(h), g2, b2),
        "the feed-forward residual adds x + MultiHead(x, x, x), the sum before the first "
        "LayerNorm; it adds the normalized h = LayerNorm(x + MultiHead(x, x, x)): "
        "LayerNorm(h + FFN(h))",
    )
    yield (
        _np_layer_norm(h + feed()(x), g2, b2),
        "the feed-forward network reads the layer input x; it reads the self-attention "
        "sub-layer's output h = LayerNorm(x + MultiHead(x, x, x)): LayerNorm(h + FFN(h))",
    )
    yield (
        encoder(activation="none"),
        "no ReLU in the feed-forward network: FFN(h) = max(0, h W1 + b1) W2 + b2 "
        "(section 3.3 of the paper)",
    )
    yield (
        encoder(activation="gelu"),
        "GELU in the feed-forward network; the paper's is ReLU, FFN(h) = max(0, h W1 + b1) W2 "
        "+ b2 (section 3.3 of the paper)",
    )


@_student_facing
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
    with that mistake: either residual missing, pre-LN or `LayerNorm(x) + Sublayer(x)`
    or no norm in either sub-layer, the feed-forward residual or input taken from
    the wrong tensor, the padding mask on the query axis or ignored, a causal mask,
    no activation or GELU, NaN from `-inf` in a fully masked row; then padded
    positions changing the output and attention that is not global.
    """
    sec = "(section 3.1 of the paper)"
    rng = np.random.default_rng(4)
    layer = _make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = rng.standard_normal((2, 6, d_model)).astype("float32")
    padding = np.array([[True] * 6, [True] * 4 + [False] * 2])
    _run("layer(x)", layer, x)
    reference = _layers.EncoderLayer(num_heads=num_heads, dff=dff, dropout=0.0)
    arrays = _layer_weights(reference, rng, x)
    layout = (
        "self-attention (query, key, value, output: kernel + bias each), its LayerNorm "
        "(gamma, beta), feed-forward (W1, b1, W2, b2), its LayerNorm (gamma, beta)"
    )
    _copy_weights(layer, arrays, "the encoder layer", layout)

    def call(inputs, mask, what="layer(x, padding_mask=mask)"):
        return _output(what, _run(what, layer, inputs, padding_mask=mask), inputs.shape, sec)

    out = call(x, padding)
    expected = _array(reference(x, padding_mask=padding), "reference")

    def candidates():
        return _encoder_candidates(x.astype("float64"), arrays, num_heads, padding)

    broken = ~np.isfinite(out).all(-1)  # (batch, seq_len)
    if broken.any():
        where = _positions(broken)
        if not (broken & padding).any():
            cause = (
                "only padded positions: their attention rows are fully masked (the padding mask "
                "hides padded queries, on the query axis or on both axes), and "
                f"{_NAN_CAUSE}. A NaN at a padded position reaches every position in the next "
                "layer (0 * NaN = NaN)"
            )
        else:
            cause = f"a fully masked attention row? {_NAN_CAUSE}"
        also = (
            _diagnose(out, candidates(), padding)
            if not _close_on(out, expected, padding & ~broken)
            else None
        )
        also = f"; at the other positions: {also}" if also else ""
        _fail(f"encoder layer: the output is NaN at {where}: {cause}{also} {sec}")
    if not _close_on(out, expected, padding):
        mistake = _diagnose(out, candidates(), padding)
        if mistake:
            named = "of the paper)" in mistake  # the section of the mistake, already said
            _fail(f"encoder layer: {mistake}" + ("" if named else f" {sec}"))
        _fail(
            f"encoder layer differs from kt.layers.EncoderLayer with the same weights "
            f"({_max_diff(out[padding], expected[padding])} at the real positions): "
            f"{_ENCODER_RIGHT} {sec}"
        )
    # padding invariance: the second row again, its two pads replaced by junk
    junk = x.copy()
    junk[1, 4:] = rng.standard_normal((2, d_model)) * 5
    if not _close(call(junk, padding)[1, :4], out[1, :4]):
        _fail(
            "padded positions change the real positions' outputs: mask padded keys (section 3.2.3 of the paper)"
        )
    # global: the last real position influences the first one
    later = x.copy()
    later[0, 5] = rng.standard_normal(d_model) * 3
    if _close(call(later, padding)[0, 0], out[0, 0]):
        _fail(
            "the first position does not see the last: encoder self-attention is global (section 3.2.3 of the paper)"
        )


_DECODER_RIGHT = (
    "the paper's layer is h1 = LayerNorm(x + SelfAttention(x) under the causal mask, position t "
    "reading positions <= t), h2 = LayerNorm(h1 + CrossAttention(queries from h1, keys and "
    "values from the context, padded source keys masked)), out = LayerNorm(h2 + FFN(h2)), "
    "FFN(h) = max(0, h W1 + b1) W2 + b2"
)


def _decoder_candidates(x, context, arrays, heads, src_pad):
    """(output, mistake) pairs: the decoder layer computed in NumPy with one known mistake."""
    self_w, (g1, b1), cross_w, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:18], arrays[18:20]
    ffn, (g3, b3) = arrays[20:24], arrays[24:]
    t = x.shape[1]
    lower = np.tril(np.ones((t, t), bool))
    causal = np.broadcast_to(lower, (x.shape[0], t, t))
    cross_mask = _attention_mask(t, src_pad)

    def self_attention(mask=causal):
        return lambda q: _np_mha(self_w, heads, q, q, mask=mask)

    def cross_attention(mask=cross_mask, kv=context):
        return lambda q: _np_mha(cross_w, heads, q, q if kv is None else kv, mask=mask)

    def feed(activation="relu"):
        return lambda h: _np_ffn(h, *ffn, activation)

    def decoder(self_mask=causal, cmask=cross_mask, activation="relu", wirings=("post",) * 3):
        h1 = _wire(wirings[0], x, self_attention(self_mask), g1, b1)
        h2 = _wire(wirings[1], h1, cross_attention(cmask), g2, b2)
        return _wire(wirings[2], h2, feed(activation), g3, b3)

    def ln(value, gamma, beta):
        return _np_layer_norm(value, gamma, beta)

    yield (
        decoder(self_mask=np.ones_like(causal)),
        "not causal: the decoder's self-attention sees later target positions; mask it so "
        "position t sees only positions <= t (np.tril)",
    )
    yield (
        decoder(self_mask=causal & ~np.eye(t, dtype=bool)),
        "the causal mask also hides the diagonal: position t must see itself, positions "
        "k <= t (np.tril(ones), not np.tril(ones, -1) or k < t); with the diagonal hidden the "
        "first position sees nothing",
    )
    yield (
        decoder(self_mask=np.broadcast_to(lower.T, causal.shape)),
        "the causal mask is turned around: position t sees itself and the later positions "
        "(np.triu); it must see itself and the earlier ones (np.tril)",
    )
    h1 = _wire("post", x, self_attention(), g1, b1)
    for first, second in ((self_w, cross_w), (cross_w, self_w)):  # either attention's weights
        h = _wire(
            "post", x, lambda q, w=first: _np_mha(w, heads, q, context, mask=cross_mask), g1, b1
        )
        h = _wire("post", h, lambda q, w=second: _np_mha(w, heads, q, q, mask=causal), g2, b2)
        yield (
            _wire("post", h, feed(), g3, b3),
            "cross-attention before self-attention: the decoder layer runs causal "
            "self-attention, then cross-attention, then the feed-forward network",
        )
    yield (
        decoder(cmask=None),
        "context_padding_mask ignored: padded source positions must get weight 0 in "
        "cross-attention",
    )
    yield (
        _wire("post", ln(h1 + cross_attention()(x), g2, b2), feed(), g3, b3),
        "cross-attention takes its queries from the layer input x; they come from the causal "
        "self-attention sub-layer's output h1 = LayerNorm(x + SelfAttention(x)): "
        "LayerNorm(h1 + CrossAttention(h1, context))",
    )
    yield (
        _wire("post", ln(x + cross_attention()(x), g2, b2), feed(), g3, b3),
        "the cross-attention sub-layer reads the layer input x (queries and residual), so the "
        "self-attention output h1 = LayerNorm(x + SelfAttention(x)) is never used; it is "
        "LayerNorm(h1 + CrossAttention(h1, context))",
    )
    yield (
        _wire("post", ln(x + cross_attention()(h1), g2, b2), feed(), g3, b3),
        "the cross-attention residual adds the layer input x; it adds the sub-layer's own "
        "input h1 = LayerNorm(x + SelfAttention(x)): LayerNorm(h1 + CrossAttention(h1, context))",
    )
    yield (
        _wire("post", ln(h1 + cross_attention(None, kv=None)(h1), g2, b2), feed(), g3, b3),
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
    h2 = _wire("post", h1, cross_attention(), g2, b2)
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
    yield (
        decoder(activation="none"),
        "no ReLU in the feed-forward network: FFN(h) = max(0, h W1 + b1) W2 + b2 "
        "(section 3.3 of the paper)",
    )
    yield (
        decoder(activation="gelu"),
        "GELU in the feed-forward network; the paper's is ReLU, FFN(h) = max(0, h W1 + b1) W2 "
        "+ b2 (section 3.3 of the paper)",
    )


@_student_facing
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
    residual missing, pre-LN or `LayerNorm(x) + Sublayer(x)` or no norm in any
    sub-layer, a residual or the feed-forward input from the wrong tensor, context
    padding ignored, no activation or GELU, NaN from `-inf` in a fully masked row;
    then the context unused and padded source positions changing the output.
    """
    sec = "(section 3.2.3 of the paper)"
    rng = np.random.default_rng(5)
    layer = _make_layer(cls, d_model=d_model, num_heads=num_heads, dff=dff)
    x = rng.standard_normal((2, 4, d_model)).astype("float32")
    context = rng.standard_normal((2, 6, d_model)).astype("float32")
    tgt_pad = np.ones((2, 4), bool)
    src_pad = np.array([[True] * 6, [True] * 4 + [False] * 2])
    _run("layer(x, context)", layer, x, context)
    reference = _layers.DecoderLayer(num_heads=num_heads, dff=dff, dropout=0.0)
    arrays = _layer_weights(reference, rng, x, context)
    layout = (
        "causal self-attention (query, key, value, output: kernel + bias each), its LayerNorm, "
        "cross-attention (the same 8 arrays), its LayerNorm, feed-forward (W1, b1, W2, b2), its LayerNorm"
    )
    _copy_weights(layer, arrays, "the decoder layer", layout)

    def call(inputs, ctx, what="layer(x, context, padding_mask, context_padding_mask)"):
        out = _run(what, layer, inputs, ctx, padding_mask=tgt_pad, context_padding_mask=src_pad)
        return _output(what, out, inputs.shape, sec, "(batch, tgt_len, d_model) = ")

    out = call(x, context)
    expected = reference(x, context, padding_mask=tgt_pad, context_padding_mask=src_pad)
    expected = _array(expected, "reference")

    def candidates():
        return _decoder_candidates(
            x.astype("float64"), context.astype("float64"), arrays, num_heads, src_pad
        )

    broken = ~np.isfinite(out).all(-1)  # (batch, tgt_len)
    if broken.any():
        where = _positions(broken)
        if broken[:, 0].all() and not broken[:, 1:].any():
            cause = (
                "the first position sees nothing: the causal mask hides the diagonal "
                "(np.tril(ones, -1), k < t), and -inf in a fully masked row makes its softmax "
                "0/0; position t must see itself, positions k <= t (np.tril(ones))"
            )
        else:
            cause = f"a fully masked attention row? {_NAN_CAUSE}"
        also = _diagnose(out, candidates(), tgt_pad)
        also = f"; at the other positions: {also}" if also else ""
        _fail(f"decoder layer: the output is NaN at {where}: {cause}{also} {sec}")
    if not _close(out, expected, loose=True):
        mistake = _diagnose(out, candidates(), tgt_pad)
        if mistake:
            named = "of the paper)" in mistake  # the section of the mistake, already said
            _fail(f"decoder layer: {mistake}" + ("" if named else f" {sec}"))
        later = x.copy()
        later[:, -1] = rng.standard_normal((2, d_model)) * 5
        if not _close(call(later, context)[:, :-1], out[:, :-1]):
            _fail(
                "not causal: changing the last target position changes earlier outputs; "
                f"mask the decoder self-attention so position t sees only positions <= t {sec}"
            )
        _fail(
            f"decoder layer differs from kt.layers.DecoderLayer with the same weights "
            f"({_max_diff(out, expected)}): {_DECODER_RIGHT} {sec}"
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


def _sublayers_of(model):
    """Every layer of `model`, nested models flattened, in the order Keras lists them."""
    found = []
    for layer in model.layers:
        if isinstance(layer, keras.Model):
            found += _sublayers_of(layer)
        else:
            found.append(layer)
    return found


def _plain(x):
    """A layer's output as a NumPy array: no Keras mask travels to the next call."""
    return np.asarray(keras.ops.convert_to_numpy(x))


def _wired(parts, source, target, variant=None):
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


_FUNCTIONAL_MISTAKES = {
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

_PADDING_HINT = (
    "derive the masks from the ids, source_mask = kt.layers.PaddingMask()(source), and pass "
    "them explicitly: padding_mask=source_mask to every encoder layer, "
    "context_padding_mask=source_mask (and padding_mask=target_mask) to every decoder layer"
)


def _calls_without(config, class_name, argument, position):
    """How many calls of `class_name` layers in a model config lack `argument` (keyword, or
    positional at index `position`); nested models included."""
    missing = 0
    for layer in config.get("layers", []):
        if layer.get("class_name") == class_name:
            for node in layer.get("inbound_nodes", []):
                given = argument in node.get("kwargs", {}) or len(node.get("args", [])) > position
                missing += not given
        elif isinstance(layer.get("config"), dict) and "layers" in layer["config"]:
            missing += _calls_without(layer["config"], class_name, argument, position)
    return missing


@_student_facing
def check_functional_transformer(
    build, num_layers: int = 2, d_model: int = 16, num_heads: int = 2, dff: int = 32
) -> None:
    """Checks a student's encoder-decoder Transformer wired with the Functional API (section 3.1).

    Contract: `build(source_vocab_size, target_vocab_size, sizes)`, `sizes` a dict with
    `num_layers`, `d_model`, `num_heads`, `dff`, returns a `keras.Model` whose inputs are
    `{"source": (batch, src_len), "target": (batch, tgt_len)}` int ids (0 = padding) and
    whose output is the logits `(batch, tgt_len, target_vocab_size)`; it is built, as in
    notebook 06, from `kt.layers.PositionalEmbedding` (source and target),
    `num_layers` `kt.layers.EncoderLayer`s and `kt.layers.DecoderLayer`s and a final
    `keras.layers.Dense`, with padding masks derived from the ids and passed explicitly to
    every encoder layer (`padding_mask`) and decoder layer (`context_padding_mask`).
    Probes: every layer on the path to the output (a Functional model drops the others),
    the parameter count (that of `kt.models.build_transformer`), the output shape, the
    logits against the student's own layers wired as the paper does (every decoder layer
    reads the last encoder layer's output) and, when they differ, against the same layers
    wired with one known mistake; the logits of the real target positions unchanged when
    padding is appended to the source or the target; the masks passed explicitly.
    Mistakes named: no padding masks at all, none in the encoder, none in cross-attention,
    masks left to Keras's implicit propagation, encoder or decoder layers left off the
    path (not stacked, or the decoder reading the embedding or an earlier encoder layer),
    decoder layer i reading encoder layer i, a softmax on the output; any other model whose
    logits change with padding is told so.
    """
    sec = "(section 3.1 of the paper)"
    sizes = {"num_layers": num_layers, "d_model": d_model, "num_heads": num_heads, "dff": dff}
    source_vocab, target_vocab = 23, 29  # different: the embeddings tell themselves apart
    what = f"build({source_vocab}, {target_vocab}, {sizes})"
    model = _run(what, build, source_vocab, target_vocab, dict(sizes))
    if not isinstance(model, keras.Model):
        _fail(f"{what} returned {type(model).__name__}; return the keras.Model(inputs, logits)")
    rng = np.random.default_rng(7)
    source = np.array([[5, 17, 9, 3, 0, 0, 0], [8, 2, 14, 21, 12, 3, 6]], "int32")
    target = np.array([[2, 14, 20, 0, 0], [2, 7, 28, 11, 4]], "int32")
    real = target != 0

    def call(src, tgt):
        label = "model({'source': ids, 'target': ids})"
        out = _run(label, model, {"source": src, "target": tgt}, training=False)
        want = (*tgt.shape, target_vocab)
        return _output(label, out, want, sec, "(batch, tgt_len, target_vocab_size) = ")

    call(source, target)
    layers = _sublayers_of(model)
    embeddings = {
        layer.vocab_size: layer
        for layer in layers
        if isinstance(layer, _layers.PositionalEmbedding)
    }
    encoders = [layer for layer in layers if isinstance(layer, _layers.EncoderLayer)]
    decoders = [layer for layer in layers if isinstance(layer, _layers.DecoderLayer)]
    heads = [
        layer
        for layer in layers
        if isinstance(layer, keras.layers.Dense) and layer.units == target_vocab
    ]
    kept = "a Functional model keeps only the layers on a path from the inputs to the outputs"
    if decoders and len(encoders) < num_layers:
        _fail(
            f"only {len(encoders)} of the {num_layers} encoder layers are in the model: {kept}, "
            "so the output of the others never reaches the logits; stack the encoder layers "
            "(layer i + 1 reads layer i's output) and let every decoder layer read the last "
            f"encoder layer's output (the encoder's output, not the embedding) {sec}"
        )
    if encoders and len(decoders) < num_layers:
        _fail(
            f"only {len(decoders)} of the {num_layers} decoder layers are in the model: {kept}; "
            "stack the decoder layers: decoder layer i + 1 reads decoder layer i's output, "
            f"and the Dense reads the last one's {sec}"
        )
    from keras_transformer import models  # the reference builder, for its parameter count

    expected_count = models.build_transformer(source_vocab, target_vocab, **sizes).count_params()
    if model.count_params() != expected_count:
        _fail(
            f"the model has {model.count_params():,} parameters; an encoder-decoder of these "
            f"sizes ({num_layers} encoder and {num_layers} decoder layers, two embeddings, the "
            f"output Dense) has {expected_count:,}: check the layers and their sizes {sec}"
        )
    # Random weights, larger than Keras's initial ones: the mistakes change the logits clearly.
    for variable in model.trainable_weights:
        shape, path = tuple(variable.shape), variable.path
        scale = 0.2 if path.endswith("gamma") else 0.1 if path.endswith(("beta", "bias")) else 0.4
        value = path.endswith("gamma") + scale * rng.standard_normal(shape)
        variable.assign(value.astype(variable.dtype))
    out = call(source, target)
    known = (
        {source_vocab, target_vocab} <= set(embeddings)
        and len(encoders) == len(decoders) == num_layers
        and len(heads) == 1
    )
    if known:
        parts = (embeddings[source_vocab], embeddings[target_vocab], encoders, decoders, heads[0])
        expected = _wired(parts, source, target)
        if not _close_on(out, expected, real, loose=False):
            for variant, mistake in _FUNCTIONAL_MISTAKES.items():
                if _close_on(out, _wired(parts, source, target, variant), real, loose=False):
                    _fail(f"{mistake} {sec}")
    # Padding: appended to the source or to the target, it leaves real positions unchanged.
    for name, src, tgt in (
        ("the source", np.pad(source, ((0, 0), (0, 3))), target),
        ("the target", source, np.pad(target, ((0, 0), (0, 2)))),
    ):
        padded = call(src, tgt)[:, : target.shape[1]]
        if not _close_on(padded, out, real, loose=False):
            change = np.abs(padded[real] - out[real]).max()
            _fail(
                f"padding appended to {name} changes the logits of the real target positions "
                f"(by up to {change:.3g}): the attention layers read padded positions; "
                f"{_PADDING_HINT} (section 3.2.3 of the paper)"
            )
    config = model.get_config()
    unmasked = {
        "encoder layer": _calls_without(config, "EncoderLayer", "padding_mask", 1),
        "decoder layer": _calls_without(config, "DecoderLayer", "context_padding_mask", 3),
    }
    if any(unmasked.values()):
        calls = " and ".join(f"{n} {kind} call(s)" for kind, n in unmasked.items() if n)
        _fail(
            f"{calls} get no padding mask: the padding is handled only by Keras's implicit "
            "masks (mask_zero=True), which not every layer passes on (the design notes "
            "measured them lost after keras.layers.Add); "
            f"{_PADDING_HINT} (section 3.2.3 of the paper)"
        )
    if known and not _close_on(out, expected, real, loose=False):
        _fail(
            f"the logits differ from your layers wired as the paper does "
            f"({_max_diff(out[real], expected[real])}): source embedding, the encoder layers "
            "in a stack, each reading the previous one's output with padding_mask=source_mask; "
            "target embedding, the decoder layers in a stack, each reading the previous one's "
            "output and the last encoder layer's output, with context_padding_mask=source_mask; "
            f"the Dense to the target vocabulary, no softmax {sec}"
        )
    if not known:
        _fail(
            f"{what}: build it from kt.layers.PositionalEmbedding (one for the source, vocab "
            f"{source_vocab}, one for the target, vocab {target_vocab}), {num_layers} "
            f"kt.layers.EncoderLayer and {num_layers} kt.layers.DecoderLayer, and one "
            f"keras.layers.Dense({target_vocab}), as notebook 06 does; found "
            f"{len(encoders)} encoder layers, {len(decoders)} decoder layers, embeddings of "
            f"vocabularies {sorted(embeddings)}, {len(heads)} Dense({target_vocab}) {sec}"
        )


def _np_token_losses(labels, logits, label_smoothing=0.0):
    log_p = logits - logits.max(-1, keepdims=True)
    log_p = log_p - np.log(np.exp(log_p).sum(-1, keepdims=True))
    nll = -np.take_along_axis(log_p, labels[..., None], axis=-1)[..., 0]
    if label_smoothing:
        nll = (1 - label_smoothing) * nll + label_smoothing * (-log_p.mean(-1))
    return nll  # (batch, seq_len)


@_student_facing
def check_masked_loss(fn) -> None:
    """Checks a student's masked token cross-entropy (the training objective, section 5).

    Contract: `fn(labels, logits)`, int `labels` `(batch, seq_len)` (0 = padding),
    `logits` `(batch, seq_len, vocab_size)`, returns the scalar mean of
    `-log softmax(logits)[label]` over the tokens whose label is not 0, as
    `MaskedSparseCategoricalCrossentropy`. If `fn` takes `label_smoothing`, 0.1
    must give the loss of section 5.4: target `(1 - eps) * one_hot + eps / vocab_size`.
    Mistakes named: padding counted, dividing by all positions, a mean of
    per-sentence means, logits read as probabilities, a sum, padding logits counted.
    """
    sec = "(section 5 of the paper)"
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
    mean = token[real].mean()
    if not np.isclose(loss, mean, rtol=1e-3, atol=1e-4):
        probs = np.clip(logits / logits.sum(-1, keepdims=True), 1e-7, 1 - 1e-7)
        for candidate, mistake in (
            (token.mean(), "padding counted: average only over the tokens whose label is not 0"),
            (
                token[real].sum() / labels.size,
                "divided by all positions; divide by the number of real tokens",
            ),
            (
                np.mean([token[i][real[i]].mean() for i in range(3)]),
                "a mean of per-sentence means; average over all real tokens of the batch",
            ),
            (token[real].sum(), "a sum, not a mean over the real tokens"),
            (
                -np.log(np.take_along_axis(probs, labels[..., None], -1)[..., 0])[real].mean(),
                "logits read as probabilities: apply the softmax (from_logits=True)",
            ),
        ):
            if np.isclose(loss, candidate, rtol=1e-3, atol=1e-4):
                _fail(f"{what}: {mistake} {sec}")
        _fail(f"{what} = {loss:.5f}; the mean cross-entropy over real tokens is {mean:.5f} {sec}")
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
                "target (1 - eps) * one_hot + eps / vocab_size (section 5.4 of the paper)"
            )
