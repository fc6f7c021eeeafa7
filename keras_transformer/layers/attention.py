"""Scaled dot-product and multi-head attention (section 3.2), written from scratch."""

import functools
import math
import warnings

import keras
from keras import ops

from keras_transformer._validation import check_rate

# Keras's own MultiHeadAttention tests (keras/src/layers/attention/multi_head_attention_test.py)
# that ours does not pass, each with the reason: extensions of Keras's layer that the paper's
# layer does not have, and tests of Keras's private internals. Every other test of that file
# passes against ours (tests/layers/test_keras_mha_suite.py); docs/api/layers.md lists these.
KERAS_DIFFERENCES: dict[str, str] = {
    "test_attention_axes_negative_indexing": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_causal_only_masks_non_4d_inputs": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_causal_only_skipped_for_subclass": "overrides Keras's private `_compute_attention`; ours computes attention in `call`",
    "test_compute_attention_combines_causal_and_explicit_mask_fused_fallback": "calls Keras's private `_compute_attention`; ours computes attention in `call`",
    "test_compute_attention_combines_causal_and_explicit_mask_manual_path": "calls Keras's private `_compute_attention`; ours computes attention in `call`",
    "test_dtype_policy_map": "dtype-policy maps, checked through Keras's private `_query_dense`; ours names it `query_dense`",
    "test_high_dim_attention_4d_inputs_1freebatch_mask2": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_high_dim_attention_4d_inputs_1freebatch_mask3": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_high_dim_attention_4d_inputs_1freebatch_mask4": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_high_dim_attention_4d_inputs_2d_attention": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_high_dim_attention_5d_inputs_2d_attention": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_high_dim_attention_5d_inputs_2d_attention_fullmask": "attention_axes (attention along chosen axes only); ours attends over all position axes jointly",
    "test_initializer": "reads Keras's private `_query_dense`, `_key_dense`, ...; ours names them `query_dense`, `key_dense`, ...",
    "test_mha_constraints": "reads Keras's private `_query_dense`, `_key_dense`, ...; ours names them `query_dense`, `key_dense`, ...",
    "test_quantize_int8": "int8 quantization, checked through Keras's private `_query_dense`; ours names it `query_dense`",
    "test_sliding_window": "sliding_window (banded local attention)",
    "test_sliding_window_serialization": "sliding_window (banded local attention)",
}


def large_negative(dtype) -> float:
    """A large negative finite in `dtype` to mask logits: -1e9 overflows float16, so -3e4 there."""
    return -3e4 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


def masked_softmax(scores, mask=None, zero_masked_rows=True):
    """Float32 softmax over the last axis, 0 where `mask` is False (and on fully masked rows
    if `zero_masked_rows`; else they come out uniform, for callers that zero them cheaper)."""
    scores = ops.cast(scores, "float32")
    if mask is not None:
        mask = ops.cast(mask, "bool")
    if scores.shape[-1] == 1:
        # One key (a first decoding step, a one-token source): the softmax is exactly 1, and
        # keras.ops.softmax would warn "softmax over axis -1 ... has size 1" at every such step.
        # The softmax stays (not ones_like, which TensorFlow folds into a constant): the traced
        # graph keeps its chain scores -> weights, which analysis.measure_layer counts at T = 1.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "You are using a softmax over axis", UserWarning)
            weights = ops.softmax(scores, axis=-1)
    elif mask is None:
        return ops.softmax(scores, axis=-1)
    else:
        weights = ops.softmax(ops.where(mask, scores, large_negative("float32")), axis=-1)
    if mask is None:
        return weights
    return ops.where(mask, weights, 0.0) if zero_masked_rows else weights


def causal_mask(q_len, kv_len, offset=0):
    """Bool `(1, q_len, kv_len)`: query `i` sees keys `j <= offset + i` (offset: cache index)."""
    rows = ops.expand_dims(ops.arange(q_len, dtype="int32") + ops.cast(offset, "int32"), -1)
    cols = ops.expand_dims(ops.arange(kv_len, dtype="int32"), 0)
    return ops.expand_dims(ops.greater_equal(rows, cols), 0)


def scaled_dot_product_attention(query, key, value, mask=None):
    r"""Scaled dot-product attention, $\mathrm{softmax}(QK^\top/\sqrt{d_k})\,V$, from scratch.

    Section 3.2.1; the softmax runs in float32 even under mixed precision.
    Masking: bool `mask`, `True` = may attend; masked keys (and fully masked rows) get 0.

    Args:
        query, key, value: `(..., q_len, d_k)`, `(..., kv_len, d_k)`, `(..., kv_len, d_v)`.
        mask: optional bool, broadcastable to `(..., q_len, kv_len)`.

    Returns:
        `(output, weights)`: `(..., q_len, d_v)` in `value`'s dtype, `(..., q_len, kv_len)` float32.

    Example:
    >>> import numpy as np
    >>> q, k = np.ones((1, 2, 4), "float32"), np.ones((1, 3, 4), "float32")
    >>> v = np.arange(12, dtype="float32").reshape(1, 3, 4)
    >>> out, w = scaled_dot_product_attention(q, k, v, mask=np.array([[True, True, False]]))
    >>> np.asarray(w)[0, 0].round(2).tolist(), np.asarray(out)[0, 0].tolist()
    ([0.5, 0.5, 0.0], [2.0, 3.0, 4.0, 5.0])

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.2.1.
    """
    query, key, value = (ops.convert_to_tensor(t) for t in (query, key, value))
    scale = ops.cast(1.0 / math.sqrt(float(query.shape[-1])), query.dtype)
    scores = ops.matmul(query, ops.swapaxes(key, -1, -2)) * scale
    weights = masked_softmax(scores, mask)  # (..., q_len, kv_len), float32
    return ops.matmul(ops.cast(weights, value.dtype), value), weights


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(keras.layers.Layer):
    r"""Multi-head attention (section 3.2.2), from scratch, Keras-compatible.

    $\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O$,
    $\mathrm{head}_i = \mathrm{Attention}(QW_i^Q, KW_i^K, VW_i^V)$. Weights (`query`, `key`,
    `value`, `attention_output`), arguments and call match `keras.layers.MultiHeadAttention`, so
    copied weights give the same outputs and scores; `KERAS_DIFFERENCES` lists what Keras's
    layer adds (the API docs show it).
    Masking: the Keras masks of `query`, `value` and `key` (e.g. from
    `Embedding(mask_zero=True)`) are ANDed with `attention_mask` and the causal mask, as Keras
    does; the output carries the query's mask. Queries that may attend to nothing output 0.

    Args:
        num_heads, key_dim: number of heads, and their query/key size.
        value_dim: per-head value size; defaults to `key_dim`.
        dropout, seed: dropout rate on the attention weights, and its seed.
        use_bias: whether the projections have biases.
        output_shape: the output's last dimension(s), an int or a tuple; defaults to the query's.
        kernel_initializer, bias_initializer: of the projections (a fresh copy each).
        kernel_regularizer, bias_regularizer, activity_regularizer: of the projections.
        kernel_constraint, bias_constraint: of the projections.
        use_gate: multiply each head's output by a sigmoid gate computed from the query.

    Call arguments:
        query, value, key: `(batch, q_len, dim)`, `(batch, kv_len, dim)`; key defaults to value.
            Inputs with several position axes, `(batch, a, b, ..., dim)`, attend over all of
            them jointly (Keras's default `attention_axes`).
        query_mask, value_mask, key_mask: bool `(batch, len)`, from Keras's mask propagation.
        attention_mask: bool, `True` = may attend; `(batch, q_len, kv_len)` or broadcastable
            to it (`(batch, 1, kv_len)`, `(q_len, kv_len)`), or per head
            `(batch, num_heads, q_len, kv_len)`.
        return_attention_scores: also return `(batch, num_heads, q_len, kv_len)`.
        training, use_causal_mask: whether dropout is active; forbid attending to later positions.
        cache, cache_update_index: keys and values `(batch, 2, max_len, num_heads, key_dim)`
            (propagated `value`/`key` masks are then ignored); index `i` writes the new ones at
            `i, i+1, ...` (causal mask counts from `i`), `None` only reads (cross-attention).

    Returns:
        `(batch, q_len, *output_shape)`, plus the scores and/or the cache.

    Example:
    >>> import numpy as np
    >>> x = np.random.rand(1, 3, 8).astype("float32")
    >>> out, scores = MultiHeadAttention(num_heads=2, key_dim=4)(x, x, return_attention_scores=True)
    >>> tuple(out.shape), tuple(scores.shape)
    ((1, 3, 8), (1, 2, 3, 3))

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.2.2.
    """

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        value_dim: int | None = None,
        dropout: float = 0.0,
        use_bias: bool = True,
        output_shape: int | tuple[int, ...] | None = None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        use_gate: bool = False,
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, size in (("num_heads", num_heads), ("key_dim", key_dim)):
            _check_size(name, size)
        if value_dim is not None:
            _check_size("value_dim", value_dim, "a positive integer or `None`")
        check_rate("dropout", dropout)
        self.num_heads, self.key_dim, self.dropout = num_heads, key_dim, dropout
        self.value_dim = value_dim if value_dim is not None else key_dim
        # `output_shape_`: Keras's Layer already has an `output_shape` property.
        self.use_bias, self.output_shape_ = use_bias, _output_dims(output_shape)
        self.use_gate, self.seed = use_gate, seed
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        # Applied to each projection's output, as Keras does (not to this layer's output).
        self.projection_activity_regularizer = keras.regularizers.get(activity_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.supports_masking = True

    def _projection(self, name, equation, output_shape, bias_axes, input_shape, activation=None):
        init = {  # a fresh initializer per projection, or all would start equal
            f"{k}_initializer": i.__class__.from_config(i.get_config())
            for k, i in (("kernel", self.kernel_initializer), ("bias", self.bias_initializer))
        }
        layer = keras.layers.EinsumDense(
            equation,
            output_shape,
            activation=activation,
            bias_axes=bias_axes if self.use_bias else None,
            kernel_regularizer=self.kernel_regularizer,
            bias_regularizer=self.bias_regularizer,
            activity_regularizer=self.projection_activity_regularizer,
            kernel_constraint=self.kernel_constraint,
            bias_constraint=self.bias_constraint,
            dtype=self.dtype_policy,
            name=name,
            **init,
        )
        layer.supports_masking = True  # position-wise: a Keras mask stays valid (no warning)
        layer.build(input_shape)
        return layer

    def build(self, query_shape, value_shape, key_shape=None):
        _check_key_value_shapes(value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        n, h, hv = self.num_heads, self.key_dim, self.value_dim
        eq = "abc,cde->abde"  # (batch, len, dim) -> (batch, len, num_heads, head_dim)
        positions = (None, None)  # several position axes are flattened into one in `call`
        self.query_dense = self._projection(
            "query", eq, (None, n, h), "de", (*positions, query_shape[-1])
        )
        self.key_dense = self._projection(
            "key", eq, (None, n, h), "de", (*positions, key_shape[-1])
        )
        if self.use_gate:  # (batch, q_len, num_heads, value_dim), in (0, 1)
            self.gate_dense = self._projection(
                "gate", eq, (None, n, hv), "de", (*positions, query_shape[-1]), "sigmoid"
            )
        self.value_dense = self._projection(
            "value", eq, (None, n, hv), "de", (*positions, value_shape[-1])
        )
        out_dims = self.output_shape_ or (query_shape[-1],)
        out = "efgh"[: len(out_dims)]
        # (batch, len, num_heads, value_dim) -> (batch, len, *out_dims)
        self.output_dense = self._projection(
            "attention_output",
            f"abcd,cd{out}->ab{out}",
            (None, *out_dims),
            out,
            (*positions, n, hv),
        )
        self.dropout_layer = keras.layers.Dropout(
            self.dropout, seed=self.seed, dtype=self.dtype_policy, name="attention_dropout"
        )

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
        attention_mask=None,
        return_attention_scores=False,
        training=None,
        use_causal_mask=False,
        cache=None,
        cache_update_index=None,
    ):
        key = value if key is None else key
        positions_shape = ops.shape(query)[:-1]  # (batch, q_len), or (batch, a, b, ...)
        query, value, key = (_one_position_axis(t, 1) for t in (query, value, key))
        query_mask, value_mask, key_mask = (
            _one_position_axis(m, 0) for m in (query_mask, value_mask, key_mask)
        )
        q = self.query_dense(query)  # (batch, q_len, num_heads, key_dim)
        if cache is not None:
            value_mask = key_mask = None
            if cache_update_index is not None:
                # One in-place update of both halves: (batch, 2, new_len, heads, key_dim)
                update = ops.stack([self.key_dense(key), self.value_dense(value)], axis=1)
                cache = ops.slice_update(cache, [0, 0, cache_update_index, 0, 0], update)
            k, v = cache[:, 0], cache[:, 1]
        else:  # (batch, kv_len, num_heads, key_dim or value_dim)
            k, v = self.key_dense(key), self.value_dense(value)
        # Every mask as (batch or 1, num_heads or 1, q_len or 1, kv_len or 1); their AND.
        masks = [ops.cast(attention_mask, "bool")] if attention_mask is not None else []
        while masks and len(masks[0].shape) < 4:  # (q_len, kv_len) or (batch, ...): as Keras
            masks[0] = ops.expand_dims(masks[0], -3)
        if query_mask is not None:
            masks.append(ops.cast(query_mask, "bool")[:, None, :, None])
        for kv_mask in (value_mask, key_mask):
            if kv_mask is not None:
                masks.append(ops.cast(kv_mask, "bool")[:, None, None, :])
        if use_causal_mask:
            offset = 0 if cache_update_index is None else cache_update_index
            masks.append(causal_mask(ops.shape(q)[1], ops.shape(k)[1], offset)[:, None])
        mask = functools.reduce(ops.logical_and, masks) if masks else None
        q = q * ops.cast(1.0 / math.sqrt(float(self.key_dim)), q.dtype)
        scores = ops.einsum("btnh,bsnh->bnts", q, k)  # (batch, num_heads, q_len, kv_len)
        # Returned scores zero fully masked rows themselves; else (cheaper) their context below.
        weights = ops.cast(masked_softmax(scores, mask, return_attention_scores), v.dtype)
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        context = ops.einsum("bnts,bsnh->btnh", dropped, v)  # (batch, q_len, heads, value_dim)
        if mask is not None and not return_attention_scores:
            has_key = ops.swapaxes(ops.any(mask, axis=-1), 1, 2)  # (batch or 1, q_len, heads or 1)
            context = context * ops.cast(has_key[..., None], context.dtype)
        if self.use_gate:
            context = context * self.gate_dense(query)
        output = self.output_dense(context)  # (batch, q_len, *out_dims)
        if len(positions_shape) > 2:  # back to (batch, a, b, ..., *out_dims)
            output = ops.reshape(output, (*positions_shape, *output.shape[2:]))
        results = (output,)
        results += (weights,) if return_attention_scores else ()
        results += () if cache is None else (cache,)
        return results[0] if len(results) == 1 else results

    def compute_cache(self, value, key=None):
        """Keys and values of `value` (and `key`), `(batch, 2, kv_len, num_heads, key_dim)`.

        Computed once and passed as `cache` with `cache_update_index=None` (read only), e.g.
        cross-attention to the encoder output while decoding step by step.
        """
        key = value if key is None else key
        return ops.stack([self.key_dense(key), self.value_dense(value)], axis=1)

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        _check_key_value_shapes(value_shape, key_shape)
        return (*tuple(query_shape)[:-1], *(self.output_shape_ or tuple(query_shape)[-1:]))

    def compute_output_spec(
        self, query, value, key=None, return_attention_scores=False, cache=None, **kwargs
    ):
        key_shape = None if key is None else key.shape
        shape = self.compute_output_shape(query.shape, value.shape, key_shape)
        results = (keras.KerasTensor(shape, dtype=self.compute_dtype),)
        if return_attention_scores:  # (batch, num_heads, q_len, kv_len)
            q_len = query.shape[1] if len(query.shape) == 3 else None
            kv_len = value.shape[1] if cache is None else cache.shape[2]
            kv_len = kv_len if len(value.shape) == 3 or cache is not None else None
            scores = (query.shape[0], self.num_heads, q_len, kv_len)
            results += (keras.KerasTensor(scores, dtype=self.compute_dtype),)
        if cache is not None:
            results += (keras.KerasTensor(cache.shape, dtype=cache.dtype),)
        return results[0] if len(results) == 1 else results

    def get_config(self):
        config = {n: getattr(self, n) for n in ("num_heads", "key_dim", "value_dim", "dropout")}
        config.update(use_bias=self.use_bias, output_shape=self.output_shape_)
        config.update(use_gate=self.use_gate, seed=self.seed)
        for n in ("kernel_initializer", "bias_initializer"):
            config[n] = keras.initializers.serialize(getattr(self, n))
        for n in ("kernel_regularizer", "bias_regularizer"):
            config[n] = keras.regularizers.serialize(getattr(self, n))
        activity = self.projection_activity_regularizer
        config["activity_regularizer"] = keras.regularizers.serialize(activity)
        for n in ("kernel_constraint", "bias_constraint"):
            config[n] = keras.constraints.serialize(getattr(self, n))
        return {**super().get_config(), **config}


class InvalidArgumentType(TypeError, ValueError):
    """A size of the wrong type: a TypeError, as everywhere in the package, and also the
    ValueError keras.layers.MultiHeadAttention raises (Keras's own tests expect it)."""


def _check_size(name: str, value, expected: str = "a positive integer") -> None:
    """Keras's wording, so that a Keras user (and Keras's tests) recognise the error."""
    wrong_type = isinstance(value, bool) or not isinstance(value, int)
    if wrong_type or value <= 0:
        error = InvalidArgumentType if wrong_type else ValueError
        raise error(
            f"Received an invalid value for argument `{name}`, expected {expected}. "
            f"Received: {name}={value!r}"
        )


def _output_dims(output_shape) -> tuple[int, ...] | None:
    """`output_shape` (None, an int or a sequence of ints) as a tuple, or None."""
    if output_shape is None:
        return None
    dims = (output_shape,) if isinstance(output_shape, int) else output_shape
    if (
        not isinstance(dims, (tuple, list))
        or not dims
        or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims)
    ):
        raise ValueError(
            f"Invalid `output_shape`: {output_shape!r}. Pass the output's last dimension(s) as "
            f"a positive int or a tuple of them, e.g. output_shape=8, or None for the query's."
        )
    return tuple(dims)


def _check_key_value_shapes(value_shape, key_shape) -> None:
    if key_shape is not None and tuple(value_shape)[1:-1] != tuple(key_shape)[1:-1]:
        raise ValueError(
            "All dimensions of `value` and `key`, except the last one, must be equal. "
            f"Received: value_shape={tuple(value_shape)} and key_shape={tuple(key_shape)}"
        )


def _one_position_axis(tensor, feature_axes: int):
    """`(batch, a, b, ..., [dim])` -> `(batch, a*b*..., [dim])`: attention over several position
    axes is attention over their product (`feature_axes`: 1 for inputs, 0 for Keras masks)."""
    if tensor is None or len(tensor.shape) <= 2 + feature_axes:
        return tensor
    shape = ops.shape(tensor)
    return ops.reshape(tensor, (shape[0], -1, *shape[len(shape) - feature_axes :]))


def attention_for(
    d_model: int, num_heads: int, key_dim: int | None = None, **kwargs
) -> MultiHeadAttention:
    """A `MultiHeadAttention` over a `d_model` stream, heads of size `d_model // num_heads`.

    Section 3.2.2 splits `d_model` into `num_heads` heads (64 = 512 / 8 in the paper), so that
    all heads together cost about what one full-size head would; pass `key_dim` for another size.
    `kwargs` go to `MultiHeadAttention`.
    """
    _check_size("num_heads", num_heads)
    if key_dim is None:
        if d_model % num_heads:
            raise ValueError(
                f"d_model={d_model} must be divisible by num_heads={num_heads}; pick num_heads "
                f"among the divisors of d_model or pass key_dim explicitly."
            )
        key_dim = d_model // num_heads
    return MultiHeadAttention(num_heads, key_dim, **kwargs)
