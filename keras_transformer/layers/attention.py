"""Scaled dot-product attention and multi-head attention, written from scratch.

Section 3.2 of "Attention Is All You Need". The multi-head layer keeps the
weight layout and call signature of `keras.layers.MultiHeadAttention`, so that
copying weights from one to the other makes both compute the same function.
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_transformer._validation import check_positive_int, check_rate


def large_negative(dtype) -> float:
    """A large negative number that is finite in `dtype` (used to mask logits).

    float16 cannot hold -1e9 (it overflows to -inf and then NaN after the
    softmax), so it gets -3e4, like Keras's own `Softmax` layer.
    """
    return -3e4 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


def masked_softmax(scores, mask=None, zero_masked_rows=True):
    """Softmax over the last axis, in float32, with masked entries set to 0.

    Masked logits are replaced by a large negative before the softmax, so
    masked keys get weight 0 (exp(-1e9) underflows). A row whose keys are all
    masked would come out uniform; with `zero_masked_rows=True` the weights
    are zeroed afterwards so it gives all zeros (as Keras's scores path does).
    That second pass over the weights can be skipped by a caller that zeroes
    such rows more cheaply itself (`MultiHeadAttention` zeroes its output).

    Args:
        scores: attention logits `(..., q_len, kv_len)` of any float dtype.
        mask: optional boolean tensor broadcastable to `scores`; `True` means
            "may attend".
        zero_masked_rows: zero the weights of fully masked rows.

    Returns:
        float32 weights of the same shape as `scores`.
    """
    scores = ops.cast(scores, "float32")
    if mask is None:
        return ops.softmax(scores, axis=-1)
    mask = ops.cast(mask, "bool")
    scores = ops.where(mask, scores, large_negative("float32"))
    weights = ops.softmax(scores, axis=-1)
    return ops.where(mask, weights, 0.0) if zero_masked_rows else weights


def causal_mask(q_len, kv_len, offset=0):
    """Lower-triangular boolean mask `(1, q_len, kv_len)`.

    Query `i` (at absolute position `offset + i`) may attend to key `j` only
    when `j <= offset + i`. `offset` is the cache index during step-by-step
    decoding, 0 otherwise.
    """
    rows = ops.expand_dims(ops.arange(q_len, dtype="int32") + ops.cast(offset, "int32"), -1)
    cols = ops.expand_dims(ops.arange(kv_len, dtype="int32"), 0)
    return ops.expand_dims(ops.greater_equal(rows, cols), 0)


def scaled_dot_product_attention(query, key, value, mask=None):
    r"""Scaled dot-product attention, $\mathrm{softmax}(QK^\top/\sqrt{d_k})\,V$, from scratch.

    Section 3.2.1 of the paper:

    $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\left(\frac{QK^\top}{\sqrt{d_k}}\right)V.$$

    Each query is compared with every key by a dot product, scaled by
    $1/\sqrt{d_k}$ so the logits do not grow with the key size, turned into
    weights by a softmax over the keys, and used to average the values. The
    softmax runs in float32 even under mixed precision.

    Masking: `mask` is boolean, `True` where a query may attend to a key; masked
    keys get weight exactly 0. A query whose keys are all masked gets all-zero
    weights (and a zero output).

    Args:
        query: `(..., q_len, d_k)`.
        key: `(..., kv_len, d_k)`.
        value: `(..., kv_len, d_v)`.
        mask: optional boolean, broadcastable to `(..., q_len, kv_len)`.

    Returns:
        `(output, weights)`: output `(..., q_len, d_v)` in the dtype of `value`,
        weights `(..., q_len, kv_len)` in float32.

    Example:

    >>> import numpy as np
    >>> q = np.ones((1, 2, 4), "float32")
    >>> k = np.ones((1, 3, 4), "float32")
    >>> v = np.arange(12, dtype="float32").reshape(1, 3, 4)
    >>> out, w = scaled_dot_product_attention(q, k, v, mask=np.array([[True, True, False]]))
    >>> np.asarray(w)[0, 0].round(2).tolist()
    [0.5, 0.5, 0.0]
    >>> np.asarray(out)[0, 0].tolist()
    [2.0, 3.0, 4.0, 5.0]

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.2.1.
    """
    query = ops.convert_to_tensor(query)
    key = ops.convert_to_tensor(key)
    value = ops.convert_to_tensor(value)
    depth = query.shape[-1]
    scale = 1.0 / math.sqrt(float(depth))
    scores = ops.matmul(query, ops.swapaxes(key, -1, -2)) * ops.cast(scale, query.dtype)
    weights = masked_softmax(scores, mask)  # (..., q_len, kv_len), float32
    output = ops.matmul(ops.cast(weights, value.dtype), value)
    return output, weights


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(keras.layers.Layer):
    r"""Multi-head attention (section 3.2.2), from scratch, Keras-compatible.

    $$\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O,
    \quad \mathrm{head}_i = \mathrm{Attention}(QW_i^Q, KW_i^K, VW_i^V).$$

    The query, key and value are each projected into $h$ = `num_heads` heads of
    size `key_dim` (values: `value_dim`), every head runs scaled dot-product
    attention on its own, and the heads are concatenated and projected back to
    the query's last dimension (or `output_shape`).

    The weights are laid out exactly as in `keras.layers.MultiHeadAttention`
    (sub-layers `query`, `key`, `value`, `attention_output`, in that order), and
    the call signature is the same, so `ours.set_weights(keras_mha.get_weights())`
    makes both layers compute the same outputs and scores.

    Masking: like Keras's layer, the Keras masks of `query`, `value` and `key`
    (from mask propagation) are consumed automatically and merged with
    `attention_mask` and the causal mask by logical AND. Prefer passing
    padding masks explicitly as `attention_mask`: a propagated mask is lost by
    any layer that does not support masking. The output carries the query's
    mask.

    Incremental decoding: pass `cache` `(batch, 2, max_len, num_heads, key_dim)`
    holding the keys (`cache[:, 0]`) and values (`cache[:, 1]`) computed so far.
    With `cache_update_index=i`, the keys and values of the new `query`
    positions are written at positions `i, i+1, ...` and attention runs over the
    whole cache (use `attention_mask` or `use_causal_mask=True`, which then
    counts positions from `i`). With `cache_update_index=None`, the cache is
    read as it is (cross-attention on precomputed encoder keys and values).
    The call then returns `(output, cache)` (or `(output, scores, cache)`).
    Propagated masks of `value`/`key` are ignored when a cache is used.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value; defaults to `key_dim`.
        dropout: dropout rate on the attention weights.
        use_bias: whether the projections have biases.
        output_shape: last dimension of the output; defaults to the query's.
        kernel_initializer, bias_initializer: initializers of the projections.
        seed: seed of the dropout.

    Call arguments:
        query: `(batch, q_len, query_dim)`.
        value: `(batch, kv_len, value_dim_in)`.
        key: `(batch, kv_len, key_dim_in)`; defaults to `value`.
        query_mask, value_mask, key_mask: boolean `(batch, len)`, normally
            filled in by Keras from mask propagation.
        attention_mask: boolean `(batch, q_len, kv_len)`, `True` = may attend.
        return_attention_scores: also return the weights
            `(batch, num_heads, q_len, kv_len)`.
        training: whether dropout is active.
        use_causal_mask: forbid attending to later positions.
        cache, cache_update_index: see "Incremental decoding".

    Returns:
        `(batch, q_len, output_dim)`, plus the scores and/or the cache.

    Example:

    >>> import numpy as np
    >>> mha = MultiHeadAttention(num_heads=2, key_dim=4)
    >>> x = np.random.rand(1, 3, 8).astype("float32")
    >>> out, scores = mha(x, x, return_attention_scores=True)
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
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim)
        if value_dim is not None:
            check_positive_int("value_dim", value_dim)
        if output_shape is not None:
            if isinstance(output_shape, (tuple, list)) and len(output_shape) == 1:
                output_shape = output_shape[0]
            check_positive_int("output_shape", output_shape)
        check_rate("dropout", dropout)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim if value_dim is not None else key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_shape_ = output_shape
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.seed = seed
        self.supports_masking = True

    def _projection(self, name, equation, output_shape, bias_axes):
        return keras.layers.EinsumDense(
            equation,
            output_shape=output_shape,
            bias_axes=bias_axes if self.use_bias else None,
            kernel_initializer=self.kernel_initializer.__class__.from_config(
                self.kernel_initializer.get_config()
            ),
            bias_initializer=self.bias_initializer.__class__.from_config(
                self.bias_initializer.get_config()
            ),
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        n, h, hv = self.num_heads, self.key_dim, self.value_dim
        # (batch, len, dim) -> (batch, len, num_heads, head_dim)
        self.query_dense = self._projection("query", "abc,cde->abde", (None, n, h), "de")
        self.query_dense.build(query_shape)
        self.key_dense = self._projection("key", "abc,cde->abde", (None, n, h), "de")
        self.key_dense.build(key_shape)
        self.value_dense = self._projection("value", "abc,cde->abde", (None, n, hv), "de")
        self.value_dense.build(value_shape)
        out_dim = self.output_shape_ or query_shape[-1]
        # (batch, len, num_heads, head_dim) -> (batch, len, out_dim)
        self.output_dense = self._projection(
            "attention_output", "abcd,cde->abe", (None, out_dim), "e"
        )
        self.output_dense.build((query_shape[0], query_shape[1], n, hv))
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
        if key is None:
            key = value
        q = self.query_dense(query)  # (batch, q_len, num_heads, key_dim)
        if cache is not None:
            value_mask = key_mask = None
            if cache_update_index is None:
                k, v = cache[:, 0], cache[:, 1]
            else:
                # One in-place update of both halves: (batch, 2, new_len, heads, key_dim)
                update = ops.stack([self.key_dense(key), self.value_dense(value)], axis=1)
                cache = ops.slice_update(cache, [0, 0, cache_update_index, 0, 0], update)
                k, v = cache[:, 0], cache[:, 1]
        else:
            k = self.key_dense(key)  # (batch, kv_len, num_heads, key_dim)
            v = self.value_dense(value)  # (batch, kv_len, num_heads, value_dim)

        mask = self._merge_masks(
            q,
            k,
            query_mask,
            value_mask,
            key_mask,
            attention_mask,
            use_causal_mask,
            offset=0 if cache_update_index is None else cache_update_index,
        )
        q = q * ops.cast(1.0 / math.sqrt(float(self.key_dim)), q.dtype)
        scores = ops.einsum("btnh,bsnh->bnts", q, k)  # (batch, num_heads, q_len, kv_len)
        if mask is not None:
            mask = ops.expand_dims(mask, 1)  # (batch, 1, q_len, kv_len)
        # Only returned scores need their fully masked rows zeroed weight by weight;
        # otherwise the (cheaper) context of such query rows is zeroed below.
        weights = masked_softmax(scores, mask, zero_masked_rows=return_attention_scores)
        weights = ops.cast(weights, v.dtype)
        dropped = self.dropout_layer(weights, training=training) if self.dropout else weights
        context = ops.einsum("bnts,bsnh->btnh", dropped, v)  # (batch, q_len, heads, value_dim)
        if mask is not None and not return_attention_scores:
            has_key = ops.any(mask, axis=-1)  # (batch or 1, 1, q_len)
            has_key = ops.expand_dims(ops.squeeze(has_key, axis=1), -1)  # (batch or 1, q_len, 1)
            context = context * ops.cast(ops.expand_dims(has_key, -1), context.dtype)
        output = self.output_dense(context)  # (batch, q_len, out_dim)

        results = [output]
        if return_attention_scores:
            results.append(weights)
        if cache is not None:
            results.append(cache)
        return results[0] if len(results) == 1 else tuple(results)

    @staticmethod
    def _merge_masks(q, k, query_mask, value_mask, key_mask, attention_mask, causal, offset):
        """AND of every mask given, shaped `(batch or 1, q_len, kv_len)`, or None."""
        masks = []
        if query_mask is not None:
            masks.append(ops.expand_dims(ops.cast(query_mask, "bool"), -1))
        if value_mask is not None:
            masks.append(ops.expand_dims(ops.cast(value_mask, "bool"), -2))
        if key_mask is not None:
            masks.append(ops.expand_dims(ops.cast(key_mask, "bool"), -2))
        if causal:
            masks.append(causal_mask(ops.shape(q)[1], ops.shape(k)[1], offset))
        if attention_mask is not None:
            masks.append(ops.cast(attention_mask, "bool"))
        if not masks:
            return None
        merged = masks[0]
        for m in masks[1:]:
            merged = ops.logical_and(merged, m)
        return merged

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": self.output_shape_,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "seed": self.seed,
            }
        )
        return config
