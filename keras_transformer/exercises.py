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
import re

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
    polarity, padded keys, 4-D inputs `(batch, heads, len, d)`.
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


def _np_sublayer(x, weights, gamma, beta, heads=0, mask=None, kv=None, pre_ln=False, res=True):
    """`LayerNorm(x + f(x))`, f FFN (4 arrays) or attention over `kv`; or pre-LN or no `res`."""
    h = _np_layer_norm(x, gamma, beta) if pre_ln else x
    if len(weights) == 4:  # W1, b1, W2, b2
        out = np.maximum(h @ weights[0] + weights[1], 0) @ weights[2] + weights[3]
    else:  # self-attention unless `kv` is given
        out = _np_mha(weights, heads, h, h if kv is None else kv, mask=mask)
    return x + out if pre_ln else _np_layer_norm(x + out if res else out, gamma, beta)


def _attention_mask(q_len, kv_padding, causal=False):
    mask = np.repeat(kv_padding[:, None, :], q_len, axis=1)  # (batch, q_len, kv_len)
    if causal:
        mask &= np.tril(np.ones(mask.shape[1:], bool))
    return mask


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
    Mistakes named: pre-LN, no residuals, padding mask ignored, a causal mask,
    padded positions changing the output, attention that is not global.
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
    if not _close(out, expected, loose=True):
        mha, (g1, b1), ffn, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:14], arrays[14:]

        def encoder(mask, **kw):
            h = _np_sublayer(x, mha, g1, b1, num_heads, mask, **kw)
            return _np_sublayer(h, ffn, g2, b2, **kw)

        full = _attention_mask(6, padding)
        for candidate, mistake in (
            (
                encoder(full, pre_ln=True),
                "pre-LN: the paper's layer is LayerNorm(x + sublayer(x)), the norm after the residual add",
            ),
            (
                encoder(full, res=False),
                "residual connections missing: LayerNorm(x + sublayer(x)), not LayerNorm(sublayer(x))",
            ),
            (
                encoder(None),
                "padding_mask ignored: padded keys must get weight 0 in self-attention (section 3.2.3 of the paper)",
            ),
            (
                encoder(_attention_mask(6, padding, causal=True)),
                "a causal mask in the encoder: encoder self-attention sees every real position (section 3.2.3 of the paper)",
            ),
        ):
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
            "padded positions change the real positions' outputs: mask padded keys (section 3.2.3 of the paper)"
        )
    # global: the last real position influences the first one
    later = x.copy()
    later[0, 5] = rng.standard_normal(d_model) * 3
    if _close(call(later, padding)[0, 0], out[0, 0]):
        _fail(
            "the first position does not see the last: encoder self-attention is global (section 3.2.3 of the paper)"
        )


@_student_facing
def check_decoder_layer(cls, d_model: int = 16, num_heads: int = 4, dff: int = 32) -> None:
    """Checks a student's decoder layer (section 3.1 of the paper, attention uses of section 3.2.3).

    Contract: `cls(d_model=..., num_heads=..., dff=...)` is a `keras.layers.Layer`;
    `layer(x, context, padding_mask=None, context_padding_mask=None)`, `x`
    `(batch, tgt_len, d_model)`, `context` the encoder output, boolean masks
    `(batch, tgt_len)`, `(batch, src_len)` (`True` = real token), computes post-LN:
    causal self-attention, Add & Norm, cross-attention (queries from x, padded
    source keys masked), Add & Norm, FFN, Add & Norm. Trainable weights, in
    creation order, as in `kt.layers.DecoderLayer`: self-attention (4 kernels, 4
    biases), LayerNorm, cross-attention, LayerNorm, FFN, LayerNorm. Mistakes named:
    not causal, cross- before self-attention, pre-LN, context padding ignored, the
    context unused.
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
    # Causality first: the most common decoder mistake, and the clearest message.
    later = x.copy()
    later[:, -1] = rng.standard_normal((2, d_model)) * 5
    if not _close(call(later, context)[:, :-1], out[:, :-1]):
        _fail(
            "not causal: changing the last target position changes earlier outputs; "
            f"mask the decoder self-attention so position t sees only positions <= t {sec}"
        )
    if not _close(out, expected, loose=True):
        self_w, (g1, b1), cross_w, (g2, b2) = arrays[:8], arrays[8:10], arrays[10:18], arrays[18:20]
        ffn, (g3, b3) = arrays[20:24], arrays[24:]
        causal = _attention_mask(4, tgt_pad, causal=True)
        cross = _attention_mask(4, src_pad)

        def decoder(self_first=True, cross_mask=cross, pre_ln=False):
            if self_first:
                h = _np_sublayer(x, self_w, g1, b1, num_heads, causal, pre_ln=pre_ln)
                h = _np_sublayer(h, cross_w, g2, b2, num_heads, cross_mask, context, pre_ln)
            else:  # the mistake: cross-attention first
                h = _np_sublayer(x, self_w, g1, b1, num_heads, cross_mask, context)
                h = _np_sublayer(h, cross_w, g2, b2, num_heads, causal)
            return _np_sublayer(h, ffn, g3, b3, pre_ln=pre_ln)

        for candidate, mistake in (
            (
                decoder(self_first=False),
                "cross-attention before self-attention: the decoder layer runs causal self-attention, then cross-attention, then the feed-forward network",
            ),
            (
                decoder(pre_ln=True),
                "pre-LN: the paper's layer is LayerNorm(x + sublayer(x)) (section 3.1 of the paper)",
            ),
            (
                decoder(cross_mask=None),
                "context_padding_mask ignored: padded source positions must get weight 0 in cross-attention",
            ),
        ):
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
