"""Scaled dot-product and multi-head attention (section 3.2), written from scratch.

`scaled_dot_product_attention` is the function tutorial 01 builds; `MultiHeadAttention` projects
queries, keys and values into heads and calls it. The Keras-compatibility plumbing (Keras's
constructor arguments, several position axes, output-shape inference) is in `_keras_compat.py`.
"""

import functools
import math
import warnings

import keras
from keras import ops

from keras_transformer.layers._keras_compat import (
    KERAS_DIFFERENCES,
    KerasAttentionCompat,
    check_key_value_shapes,
    propagated_masks,
)

__all__ = ["KERAS_DIFFERENCES", "MultiHeadAttention", "scaled_dot_product_attention"]


def large_negative(dtype) -> float:
    """A large negative finite in `dtype` to mask logits: -1e9 overflows float16, so -3e4 there."""
    return -3e4 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


def write_positions(cache, update, index):
    """`cache` `(batch, 2, length, ...)` with `update` `(batch, 2, n, ...)` written at positions
    `index, ..., index + n - 1` of axis 2.

    `ops.slice_update`, except for a cache whose length is unknown when traced (the prefix the
    search passes without XLA: `IncrementalDecoder(static_shapes=False)`) on TensorFlow. There
    `slice_update` (`XlaDynamicUpdateSlice`) runs by compiling itself with XLA for every new
    shape, 2-3 s on a 2-core CPU for each batch size a search meets; a scatter at the
    `(row, key or value, position)` of each update is a plain TensorFlow kernel. A cache of fixed
    length (XLA's whole buffer) keeps `slice_update`, which XLA updates in place.

    Example:
    >>> cache = ops.zeros((1, 2, 4, 1, 1))
    >>> ops.convert_to_numpy(write_positions(cache, ops.ones((1, 2, 1, 1, 1)), 2))[0, 0, :, 0, 0]
    array([0., 0., 1., 0.], dtype=float32)
    """
    if keras.backend.backend() != "tensorflow" or cache.shape[2] is not None:
        return ops.slice_update(cache, [0, 0, index, 0, 0], update)
    shape = ops.shape(update)
    rows, kinds, positions = ops.meshgrid(
        ops.arange(shape[0], dtype="int32"),
        ops.arange(2, dtype="int32"),
        ops.arange(shape[2], dtype="int32") + ops.cast(index, "int32"),
        indexing="ij",
    )
    return ops.scatter_update(cache, ops.stack([rows, kinds, positions], axis=-1), update)


def masked_softmax(scores, mask=None):
    """Float32 softmax over the last axis; keys where `mask` is False get weight 0.

    A row whose keys are all masked comes out uniform here; `scaled_dot_product_attention`
    zeroes it.
    """
    scores = ops.cast(scores, "float32")
    if mask is not None:
        scores = ops.where(ops.cast(mask, "bool"), scores, large_negative("float32"))
    if scores.shape[-1] != 1:
        return ops.softmax(scores, axis=-1)
    # One key (a first decoding step, a one-token source): the softmax is exactly 1, and
    # keras.ops.softmax would warn "softmax over axis -1 ... has size 1" at every such step.
    # The softmax stays (not ones_like, which TensorFlow folds into a constant): the traced
    # graph keeps its chain scores -> weights, which analysis.measure_layer counts at T = 1.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "You are using a softmax over axis", UserWarning)
        return ops.softmax(scores, axis=-1)


def causal_mask(q_len, kv_len, offset=0):
    """Bool `(1, q_len, kv_len)`: query `i` sees keys `j <= offset + i` (offset: cache index)."""
    rows = ops.expand_dims(ops.arange(q_len, dtype="int32") + ops.cast(offset, "int32"), -1)
    cols = ops.expand_dims(ops.arange(kv_len, dtype="int32"), 0)
    return ops.expand_dims(ops.greater_equal(rows, cols), 0)


def scaled_dot_product_attention(
    query,
    key,
    value,
    mask=None,
    *,
    dropout_rate: float = 0.0,
    training: bool = False,
    seed=None,
    return_weights: bool = True,
    fused: bool | None = None,
):
    r"""Scaled dot-product attention, $\mathrm{softmax}(QK^\top/\sqrt{d_k})\,V$, from scratch.

    Section 3.2.1; the softmax runs in float32 even under mixed precision. This is the function
    every attention layer of the package runs (`MultiHeadAttention` calls it once per layer
    call, all heads at once). On a GPU with the JAX or PyTorch backend, when the weights are not
    requested and no dropout is active, it hands the same computation to the backend's fused
    kernel (`keras.ops.dot_product_attention`); `fused` chooses, and a test checks both paths
    agree.
    Masking: bool `mask`, `True` = may attend; masked keys get weight 0, and a query that may
    attend to nothing outputs 0 (its weights are all 0), not an average of the values.

    Args:
        query, key, value: `(..., q_len, d_k)`, `(..., kv_len, d_k)`, `(..., kv_len, d_v)`.
        mask: optional bool, broadcastable to `(..., q_len, kv_len)`.
        dropout_rate, training, seed: dropout on the attention weights (as
            `keras.layers.MultiHeadAttention` applies it), only when `training`; `seed` an int
            or a `keras.random.SeedGenerator`.
        return_weights: compute and return the weights (else `None` is returned for them).
        fused: hand the computation to the backend's fused kernel when allowed (True), never
            (False), or where it pays: a GPU with the JAX or PyTorch backend (None). Layers pass
            their `flash_attention` argument (Keras's name).

    Returns:
        `(output, weights)`: `(..., q_len, d_v)` in `value`'s dtype, `(..., q_len, kv_len)`
        float32 (before dropout), or `None` when `return_weights=False`.

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
    mask = None if mask is None else ops.cast(mask, "bool")
    dropout_active = bool(training) and dropout_rate > 0
    if not return_weights and not dropout_active and _fused_attention_enabled(fused, query, value):
        return _fused_attention(query, key, value, mask), None
    # Q / sqrt(d_k) before the product: the same scores as dividing QK^T, on fewer numbers.
    query = query * ops.cast(1.0 / math.sqrt(float(query.shape[-1])), query.dtype)
    scores = ops.matmul(query, ops.swapaxes(key, -1, -2))  # (..., q_len, kv_len)
    weights = masked_softmax(scores, mask)  # float32
    attended = ops.cast(weights, value.dtype)
    if dropout_active:
        attended = keras.random.dropout(attended, dropout_rate, seed=seed)
    output = ops.matmul(attended, value)  # (..., q_len, d_v)
    if mask is not None:  # a query with no key to read gets 0, not the mean of the values
        has_key = ops.any(mask, axis=-1, keepdims=True)  # (..., q_len or 1, 1), often tiny
        output = output * ops.cast(has_key, output.dtype)
        weights = weights * ops.cast(has_key, weights.dtype) if return_weights else None
    return output, (weights if return_weights else None)


@functools.cache
def _gpu_backend() -> bool:
    backend = keras.config.backend()
    if backend == "jax":
        import jax

        return jax.default_backend() == "gpu"
    if backend == "torch":
        import torch

        return torch.cuda.is_available()
    return False  # TensorFlow's keras.ops.dot_product_attention is not a fused kernel


def _fused_attention_enabled(fused: bool | None, query, value) -> bool:
    enabled = _gpu_backend() if fused is None else fused
    # The fused kernels take (batch, heads, len, dim) with one head size for q, k and v.
    same_size = query.shape[-1] == value.shape[-1]
    return bool(enabled) and len(query.shape) == 4 and same_size


def _fused_attention(query, key, value, mask):
    """The same function via `keras.ops.dot_product_attention` (`(batch, len, heads, dim)`)."""
    output = ops.dot_product_attention(
        ops.swapaxes(query, 1, 2),
        ops.swapaxes(key, 1, 2),
        ops.swapaxes(value, 1, 2),
        mask=mask,
        scale=1.0 / math.sqrt(float(query.shape[-1])),
    )
    output = ops.swapaxes(output, 1, 2)  # (batch, heads, q_len, d_v)
    if mask is not None:
        output = output * ops.cast(ops.any(mask, axis=-1, keepdims=True), output.dtype)
    return output


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(KerasAttentionCompat):
    r"""Multi-head attention (section 3.2.2), from scratch, Keras-compatible.

    $\mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O$,
    $\mathrm{head}_i = \mathrm{Attention}(QW_i^Q, KW_i^K, VW_i^V)$: the four projections are
    `EinsumDense` layers and every head's attention is one call of
    `scaled_dot_product_attention`. Weights (`query`, `key`, `value`, `attention_output`),
    arguments and call match `keras.layers.MultiHeadAttention`, so copied weights give the same
    outputs and scores; `KERAS_DIFFERENCES` lists what Keras's layer adds (the API docs show it).
    Masking: the Keras masks of `query`, `value` and `key` (e.g. from
    `Embedding(mask_zero=True)`) are ANDed with `attention_mask` and the causal mask, as Keras
    does; the output carries the query's mask. Queries that may attend to nothing read nothing
    (their context is 0).

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
        flash_attention: the backend's fused kernel when the scores are not returned (True),
            never (False), or where it pays: a GPU with JAX or PyTorch (None); Keras's argument.

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

    def __init__(self, num_heads: int, key_dim: int, **kwargs):
        super().__init__(num_heads, key_dim, **kwargs)  # Keras's arguments: _keras_compat.py
        if self.dropout > 0:
            self.seed_generator = keras.random.SeedGenerator(self.seed)

    def build(self, query_shape, value_shape, key_shape=None):
        check_key_value_shapes(value_shape, key_shape)
        key_shape = value_shape if key_shape is None else key_shape
        n, h, hv = self.num_heads, self.key_dim, self.value_dim
        heads = "abc,cde->abde"  # (batch, len, dim) -> (batch, len, num_heads, head_dim)
        self.query_dense = self.projection("query", heads, (None, n, h), "de", query_shape[-1:])
        self.key_dense = self.projection("key", heads, (None, n, h), "de", key_shape[-1:])
        self.build_gate(query_shape[-1])  # Keras's weight order: the gate before the value
        self.value_dense = self.projection("value", heads, (None, n, hv), "de", value_shape[-1:])
        out_dims = self.output_shape_ or (query_shape[-1],)
        out = "efgh"[: len(out_dims)]
        # (batch, len, num_heads, value_dim) -> (batch, len, *out_dims): concat heads, W^O
        self.output_dense = self.projection(
            "attention_output", f"abcd,cd{out}->ab{out}", (None, *out_dims), out, (n, hv)
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
        query, value, key, positions = self.flatten_positions(query, value, key)
        q = self.query_dense(query)  # (batch, q_len, num_heads, key_dim)
        if cache is None:  # (batch, kv_len, num_heads, key_dim or value_dim)
            k, v = self.key_dense(key), self.value_dense(value)
        else:  # decoding step by step: keys and values of earlier positions are kept
            cache = self.update_cache(cache, key, value, cache_update_index)
            k, v = cache[:, 0], cache[:, 1]
            value_mask = key_mask = None
        masks = propagated_masks(query_mask, value_mask, key_mask)
        if attention_mask is not None:
            masks.append(_per_head(attention_mask))
        if use_causal_mask:
            offset = 0 if cache_update_index is None else cache_update_index
            masks.append(causal_mask(ops.shape(q)[1], ops.shape(k)[1], offset)[:, None])
        mask = functools.reduce(ops.logical_and, masks) if masks else None
        context, weights = scaled_dot_product_attention(
            _heads_first(q),
            _heads_first(k),
            _heads_first(v),
            mask,  # (batch or 1, heads or 1, q_len or 1, kv_len)
            dropout_rate=self.dropout,
            training=training,
            seed=getattr(self, "seed_generator", None),
            return_weights=return_attention_scores,
            fused=self.flash_attention,
        )  # (batch, num_heads, q_len, value_dim)
        context = self.gate(_heads_first(context), query)  # (batch, q_len, num_heads, value_dim)
        output = self.restore_positions(self.output_dense(context), positions)
        results = (output,)
        results += (weights,) if return_attention_scores else ()
        results += () if cache is None else (cache,)
        return results[0] if len(results) == 1 else results

    def update_cache(self, cache, key, value, index):
        """Writes the keys and values of `key`/`value` at positions `index, index + 1, ...` of
        `cache` `(batch, 2, max_len, num_heads, key_dim)`; `index` None only reads it."""
        if index is None:
            return cache
        update = ops.stack([self.key_dense(key), self.value_dense(value)], axis=1)
        return write_positions(cache, update, index)

    def compute_cache(self, value, key=None):
        """Keys and values of `value` (and `key`), `(batch, 2, kv_len, num_heads, key_dim)`.

        Computed once and passed as `cache` with `cache_update_index=None` (read only), e.g.
        cross-attention to the encoder output while decoding step by step.
        """
        key = value if key is None else key
        return ops.stack([self.key_dense(key), self.value_dense(value)], axis=1)


def _heads_first(x):
    """`(batch, len, num_heads, dim)` <-> `(batch, num_heads, len, dim)`."""
    return ops.transpose(x, (0, 2, 1, 3))


def _per_head(attention_mask):
    """`(q_len, kv_len)` or `(batch, q_len, kv_len)` -> `(batch or 1, 1, q_len, kv_len)`."""
    mask = ops.cast(attention_mask, "bool")
    while len(mask.shape) < 4:  # as Keras: the heads axis is third from the end
        mask = ops.expand_dims(mask, -3)
    return mask
