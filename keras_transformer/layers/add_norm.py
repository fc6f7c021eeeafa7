"""Residual connection and layer normalization (section 3.1 of the paper)."""

import keras


@keras.saving.register_keras_serializable(package="keras_transformer")
class AddNorm(keras.layers.Layer):
    r"""$\mathrm{LayerNorm}(x + \mathrm{Sublayer}(x))$, or the pre-LN $x + \mathrm{Sublayer}(\mathrm{LayerNorm}(x))$.

    Section 3.1. Usage: `out = add_norm(x, sublayer(add_norm.normalize_input(x)))`.
    Masking: element-wise, so the mask of `inputs` passes through unchanged.

    Args:
        norm_first, epsilon: pre-LN (stabler when deep) instead of post-LN; LayerNorm's epsilon.

    Call arguments:
        inputs, sublayer_output: the residual stream `x` `(batch, seq_len, d_model)`, sublayer(x).

    Returns:
        `(batch, seq_len, d_model)`.

    Example:
    >>> import numpy as np
    >>> x = np.random.rand(2, 3, 4).astype("float32")
    >>> y = keras.ops.convert_to_numpy(AddNorm()(x, x))  # any backend's tensor as NumPy
    >>> np.allclose(y.mean(-1), 0.0, atol=1e-5)
    True

    Reference:
        Vaswani et al., 2017, section 3.1; Xiong et al., 2020 (pre-LN).
    """

    def __init__(self, norm_first: bool = False, epsilon: float = 1e-6, **kwargs):
        super().__init__(**kwargs)
        self.norm_first = norm_first
        self.epsilon = epsilon
        self.supports_masking = True

    def build(self, inputs_shape, sublayer_output_shape=None):
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(inputs_shape)

    def normalize_input(self, inputs):
        """The sub-layer's input: `LayerNorm(inputs)` in pre-LN, else `inputs`."""
        return self.layer_norm(inputs) if self.norm_first else inputs

    def call(self, inputs, sublayer_output):
        total = inputs + sublayer_output
        return total if self.norm_first else self.layer_norm(total)

    def get_config(self):
        return {**super().get_config(), "norm_first": self.norm_first, "epsilon": self.epsilon}
