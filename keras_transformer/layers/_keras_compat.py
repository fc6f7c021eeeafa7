"""Keras-compatibility plumbing of `MultiHeadAttention`, kept apart from its math.

`keras_transformer.layers.MultiHeadAttention` computes section 3.2.2 of the paper in a few lines
(attention.py). Everything here exists so that the same layer is also a drop-in for
`keras.layers.MultiHeadAttention`: the same constructor arguments (regularizers, constraints,
initializers, a gate, `output_shape`), the same weight layout, Keras's error wording, inputs with
several position axes, and output-shape inference for symbolic calls. A student can skip this
file; Keras's own test suite (tests/layers/test_keras_mha_suite.py) is why it exists.
"""

import keras
from keras import ops

from keras_transformer._validation import check_choice, check_num_heads, check_rate, check_size

# Keras's own MultiHeadAttention tests (keras/src/layers/attention/multi_head_attention_test.py)
# that ours does not pass, each with the reason: extensions of Keras's layer that the paper's
# layer does not have, and tests of Keras's private internals. Every other test of that file
# passes against ours (tests/layers/test_keras_mha_suite.py); docs/api/layers.md lists these.
_AXES = (
    "attention_axes (attention along chosen axes only); ours attends over all position axes jointly"
)
_PRIVATE = "reads Keras's private `_query_dense`, `_key_dense`, ...; ours names them `query_dense`, `key_dense`, ..."
KERAS_DIFFERENCES: dict[str, str] = {
    "test_attention_axes_negative_indexing": _AXES,
    "test_causal_only_masks_non_4d_inputs": _AXES,
    "test_causal_only_skipped_for_subclass": "overrides Keras's private `_compute_attention`; ours computes attention in `scaled_dot_product_attention`",
    "test_compute_attention_combines_causal_and_explicit_mask_fused_fallback": "calls Keras's private `_compute_attention`; ours computes attention in `scaled_dot_product_attention`",
    "test_compute_attention_combines_causal_and_explicit_mask_manual_path": "calls Keras's private `_compute_attention`; ours computes attention in `scaled_dot_product_attention`",
    "test_dtype_policy_map": "dtype-policy maps, checked through Keras's private `_query_dense`; ours names it `query_dense`",
    "test_high_dim_attention_4d_inputs_1freebatch_mask2": _AXES,
    "test_high_dim_attention_4d_inputs_1freebatch_mask3": _AXES,
    "test_high_dim_attention_4d_inputs_1freebatch_mask4": _AXES,
    "test_high_dim_attention_4d_inputs_2d_attention": _AXES,
    "test_high_dim_attention_5d_inputs_2d_attention": _AXES,
    "test_high_dim_attention_5d_inputs_2d_attention_fullmask": _AXES,
    "test_initializer": _PRIVATE,
    "test_mha_constraints": _PRIVATE,
    "test_quantize_int8": "int8 quantization, checked through Keras's private `_query_dense`; ours names it `query_dense`",
    "test_sliding_window": "sliding_window (banded local attention)",
    "test_sliding_window_serialization": "sliding_window (banded local attention)",
}


def output_dims(output_shape) -> tuple[int, ...] | None:
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


def check_key_value_shapes(value_shape, key_shape) -> None:
    if key_shape is not None and tuple(value_shape)[1:-1] != tuple(key_shape)[1:-1]:
        raise ValueError(
            "All dimensions of `value` and `key`, except the last one, must be equal. "
            f"Received: value_shape={tuple(value_shape)} and key_shape={tuple(key_shape)}"
        )


def one_position_axis(tensor, feature_axes: int):
    """`(batch, a, b, ..., [dim])` -> `(batch, a*b*..., [dim])`: attention over several position
    axes is attention over their product (`feature_axes`: 1 for inputs, 0 for Keras masks)."""
    if tensor is None or len(tensor.shape) <= 2 + feature_axes:
        return tensor
    shape = ops.shape(tensor)
    return ops.reshape(tensor, (shape[0], -1, *shape[len(shape) - feature_axes :]))


def propagated_masks(query_mask, value_mask, key_mask) -> list:
    """Keras's propagated masks (`Embedding(mask_zero=True)`), each broadcastable to
    `(batch, num_heads, q_len, kv_len)`: the query mask on the query axis, the others on keys."""
    masks = []
    if query_mask is not None:
        masks.append(ops.cast(one_position_axis(query_mask, 0), "bool")[:, None, :, None])
    for kv_mask in (value_mask, key_mask):
        if kv_mask is not None:
            masks.append(ops.cast(one_position_axis(kv_mask, 0), "bool")[:, None, None, :])
    return masks


class KerasAttentionCompat(keras.layers.Layer):
    """Base of `MultiHeadAttention`: Keras's constructor arguments, projections and config.

    The subclass implements `call` (the paper's math). This base keeps the arguments that make
    the layer a drop-in for `keras.layers.MultiHeadAttention` (regularizers, constraints, a gate,
    `output_shape`), builds the projections with Keras's weight layout, flattens several
    position axes into one, and infers output shapes for symbolic calls.
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
        flash_attention: bool | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        check_num_heads(num_heads)
        check_size("key_dim", key_dim)
        if value_dim is not None:
            check_size("value_dim", value_dim, "a positive integer or `None`")
        check_rate("dropout", dropout)
        self.num_heads, self.key_dim, self.dropout = num_heads, key_dim, dropout
        self.value_dim = value_dim if value_dim is not None else key_dim
        # `output_shape_`: Keras's Layer already has an `output_shape` property.
        self.use_bias, self.output_shape_ = use_bias, output_dims(output_shape)
        self.use_gate, self.seed = use_gate, seed
        self.flash_attention = check_choice("flash_attention", flash_attention, (None, True, False))
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        # Applied to each projection's output, as Keras does (not to this layer's output).
        self.projection_activity_regularizer = keras.regularizers.get(activity_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.supports_masking = True

    def projection(self, name, equation, output_shape, bias_axes, input_dims, activation=None):
        """A built `EinsumDense` with Keras's arguments; inputs `(batch, len, *input_dims)`."""
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
        layer.build((None, None, *input_dims))
        return layer

    def build_gate(self, query_dim: int) -> None:
        """Keras's `use_gate`: a sigmoid gate per head, `(batch, q_len, num_heads, value_dim)`."""
        if self.use_gate:
            self.gate_dense = self.projection(
                "gate",
                "abc,cde->abde",
                (None, self.num_heads, self.value_dim),
                "de",
                (query_dim,),
                "sigmoid",
            )

    def gate(self, context, query):
        """`context` `(batch, q_len, num_heads, value_dim)` times the gate, if `use_gate`."""
        return context * self.gate_dense(query) if self.use_gate else context

    @staticmethod
    def flatten_positions(query, value, key):
        """Inputs with several position axes `(batch, a, b, ..., dim)` as `(batch, a*b*.., dim)`;
        also returns the query's position shape to restore the output with."""
        positions_shape = ops.shape(query)[:-1]  # (batch, q_len), or (batch, a, b, ...)
        query, value, key = (one_position_axis(t, 1) for t in (query, value, key))
        return query, value, key, positions_shape

    @staticmethod
    def restore_positions(output, positions_shape):
        if len(positions_shape) <= 2:
            return output
        return ops.reshape(output, (*positions_shape, *output.shape[2:]))

    def compute_output_shape(self, query_shape, value_shape, key_shape=None):
        check_key_value_shapes(value_shape, key_shape)
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
        config.update(use_gate=self.use_gate, seed=self.seed, flash_attention=self.flash_attention)
        for n in ("kernel_initializer", "bias_initializer"):
            config[n] = keras.initializers.serialize(getattr(self, n))
        for n in ("kernel_regularizer", "bias_regularizer"):
            config[n] = keras.regularizers.serialize(getattr(self, n))
        activity = self.projection_activity_regularizer
        config["activity_regularizer"] = keras.regularizers.serialize(activity)
        for n in ("kernel_constraint", "bias_constraint"):
            config[n] = keras.constraints.serialize(getattr(self, n))
        return {**super().get_config(), **config}
