"""Scaled dot-product and multi-head attention (section 3.2), written from scratch."""

import functools
import math

import keras
from keras import ops

from keras_transformer._validation import check_positive_int, check_rate


def large_negative(dtype) -> float:
    """A large negative finite in `dtype` to mask logits: -1e9 overflows float16, so -3e4 there."""
    return -3e4 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


def masked_softmax(scores, mask=None, zero_masked_rows=True):
    """Float32 softmax over the last axis, 0 where `mask` is False (and on fully masked rows
    if `zero_masked_rows`; else they come out uniform, for callers that zero them cheaper)."""
    scores = ops.cast(scores, "float32")
    if mask is None:
        return ops.softmax(scores, axis=-1)
    mask = ops.cast(mask, "bool")
    weights = ops.softmax(ops.where(mask, scores, large_negative("float32")), axis=-1)
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
    `value`, `attention_output`) and call match `keras.layers.MultiHeadAttention`, so copied
    weights give the same outputs and scores.
    Masking: propagated `query`/`value`/`key` masks are ANDed with `attention_mask` (preferred)
    and the causal mask; the output carries the query's mask.

    Args:
        num_heads, key_dim: number of heads, and their query/key size.
        value_dim: per-head value size; defaults to `key_dim`.
        dropout, seed: dropout rate on the attention weights, and its seed.
        use_bias, kernel_initializer, bias_initializer: of the projections.
        output_shape: last dimension of the output; defaults to the query's.

    Call arguments:
        query, value, key: `(batch, q_len, dim)`, `(batch, kv_len, dim)`; key defaults to value.
        query_mask, value_mask, key_mask: bool `(batch, len)`, from propagation.
        attention_mask: bool `(batch, q_len, kv_len)`, `True` = may attend.
        return_attention_scores: also return `(batch, num_heads, q_len, kv_len)`.
        training, use_causal_mask: whether dropout is active; forbid attending to later positions.
        cache, cache_update_index: keys and values `(batch, 2, max_len, num_heads, key_dim)`
            (propagated `value`/`key` masks are then ignored); index `i` writes the new ones at
            `i, i+1, ...` (causal mask counts from `i`), `None` only reads (cross-attention).

    Returns:
        `(batch, q_len, output_dim)`, plus the scores and/or the cache.

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
        output_shape: int | None = None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        seed: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(output_shape, (tuple, list)) and len(output_shape) == 1:
            output_shape = output_shape[0]
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim)
        for name, size in (("value_dim", value_dim), ("output_shape", output_shape)):
            if size is not None:
                check_positive_int(name, size)
        check_rate("dropout", dropout)
        self.num_heads, self.key_dim, self.dropout = num_heads, key_dim, dropout
        self.use_bias, self.output_shape_, self.seed = use_bias, output_shape, seed
        self.value_dim = value_dim if value_dim is not None else key_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

    def _projection(self, name, equation, output_shape, bias_axes, input_shape):
        init = {  # a fresh initializer per projection
            f"{k}_initializer": i.__class__.from_config(i.get_config())
            for k, i in (("kernel", self.kernel_initializer), ("bias", self.bias_initializer))
        }
        bias_axes = bias_axes if self.use_bias else None
        layer = keras.layers.EinsumDense(
            equation, output_shape, bias_axes=bias_axes, dtype=self.dtype_policy, name=name, **init
        )
        layer.build(input_shape)
        return layer

    def build(self, query_shape, value_shape, key_shape=None):
        n, h, hv = self.num_heads, self.key_dim, self.value_dim
        eq = "abc,cde->abde"  # (batch, len, dim) -> (batch, len, num_heads, head_dim)
        self.query_dense = self._projection("query", eq, (None, n, h), "de", query_shape)
        self.key_dense = self._projection("key", eq, (None, n, h), "de", key_shape or value_shape)
        self.value_dense = self._projection("value", eq, (None, n, hv), "de", value_shape)
        out_dim = self.output_shape_ or query_shape[-1]
        # (batch, len, num_heads, head_dim) -> (batch, len, out_dim)
        self.output_dense = self._projection(
            "attention_output", "abcd,cde->abe", (None, out_dim), "e", (*query_shape[:2], n, hv)
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
        offset = 0 if cache_update_index is None else cache_update_index
        masks = [(query_mask, -1), (value_mask, -2), (key_mask, -2)]
        masks = [ops.expand_dims(ops.cast(m, "bool"), axis) for m, axis in masks if m is not None]
        if use_causal_mask:
            masks.append(causal_mask(ops.shape(q)[1], ops.shape(k)[1], offset))
        if attention_mask is not None:
            masks.append(ops.cast(attention_mask, "bool"))
        # AND of every mask, (batch or 1, 1, q_len, kv_len), or None
        mask = ops.expand_dims(functools.reduce(ops.logical_and, masks), 1) if masks else None
        q = q * ops.cast(1.0 / math.sqrt(float(self.key_dim)), q.dtype)
        scores = ops.einsum("btnh,bsnh->bnts", q, k)  # (batch, num_heads, q_len, kv_len)
        # Returned scores zero fully masked rows themselves; else (cheaper) their context below.
        weights = ops.cast(masked_softmax(scores, mask, return_attention_scores), v.dtype)
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        context = ops.einsum("bnts,bsnh->btnh", dropped, v)  # (batch, q_len, heads, value_dim)
        if mask is not None and not return_attention_scores:
            has_key = ops.any(mask[:, 0], axis=-1)  # (batch or 1, q_len)
            context = context * ops.cast(has_key[:, :, None, None], context.dtype)
        results = (self.output_dense(context),)  # (batch, q_len, out_dim)
        results += (weights,) if return_attention_scores else ()
        results += () if cache is None else (cache,)
        return results[0] if len(results) == 1 else results

    def get_config(self):
        config = {n: getattr(self, n) for n in ("num_heads", "key_dim", "value_dim", "dropout")}
        config.update(use_bias=self.use_bias, output_shape=self.output_shape_, seed=self.seed)
        for n in ("kernel_initializer", "bias_initializer"):
            config[n] = keras.initializers.serialize(getattr(self, n))
        return {**super().get_config(), **config}
