"""Token embedding plus position information (section 3.5 of the paper)."""

import math

import keras
import numpy as np
from keras import ops

from keras_transformer._validation import check_positive_int


def positional_encoding(length: int, depth: int) -> np.ndarray:
    r"""The paper's sinusoidal position encoding, shape `(length, depth)`.

    Section 3.5: $PE_{(pos,\,2i)} = \sin(pos / 10000^{2i/d})$, $PE_{(pos,\,2i+1)} = \cos(\cdot)$,
    interleaved as in the paper (the TensorFlow tutorial's sines-then-cosines permutes columns).

    Args:
        length, depth: number of positions, size of each encoding (`d_model`; may be odd).

    Returns:
        float32 NumPy array `(length, depth)`.

    Example:
    >>> pe = positional_encoding(length=50, depth=16)
    >>> pe.shape, pe[0, :4].tolist()  # position 0: sin(0)=0, cos(0)=1
    ((50, 16), [0.0, 1.0, 0.0, 1.0])

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, section 3.5.
    """
    check_positive_int("length", length)
    check_positive_int("depth", depth)
    positions = np.arange(length, dtype=np.float64)[:, None]  # (length, 1)
    pair = np.arange(depth, dtype=np.float64)[None, :] // 2  # (1, depth): i for 2i and 2i+1
    angles = positions / np.power(10000.0, 2.0 * pair / depth)  # (length, depth)
    encoding = np.where(np.arange(depth) % 2 == 0, np.sin(angles), np.cos(angles))
    return encoding.astype("float32")


@keras.saving.register_keras_serializable(package="keras_transformer")
class PositionalEmbedding(keras.layers.Layer):
    r"""Token embedding scaled by $\sqrt{d_{model}}$, plus a position encoding.

    Sections 3.4-3.5: attention cannot see word order, so the sinusoid (or a
    learned table) is added. With `reverse=True` the token matrix is the
    pre-softmax projection (shared embeddings): float32 logits `hidden @ E^T`.
    Masking: with `mask_zero=True` the layer returns the mask `ids != 0`.

    Args:
        vocab_size, d_model: number of token ids, embedding size.
        max_length: size of the position table.
        mask_zero, learned_positions: id 0 is padding (mask it); learned positions, not sines.
        scale_embeddings, embeddings_initializer: multiply tokens by sqrt(d_model); of the tokens.

    Call arguments:
        inputs: int ids `(batch, seq_len)`; `(batch, seq_len, d_model)` if `reverse`.
        start_index, reverse: position of `inputs[:, 0]`; project onto the vocabulary instead.

    Returns:
        `(batch, seq_len, d_model)`, or logits `(batch, seq_len, vocab_size)`.

    Example:
    >>> import numpy as np
    >>> layer, ids = PositionalEmbedding(vocab_size=10, d_model=8), np.array([[5, 3, 0]])
    >>> tuple(layer(ids).shape), np.asarray(layer.compute_mask(ids)).tolist()
    ((1, 3, 8), [[True, True, False]])

    Reference:
        Vaswani et al., "Attention Is All You Need", 2017, sections 3.4, 3.5.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_length: int = 2048,
        mask_zero: bool = True,
        learned_positions: bool = False,
        scale_embeddings: bool = True,
        embeddings_initializer="uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size, self.d_model, self.max_length = vocab_size, d_model, max_length
        for arg in ("vocab_size", "d_model", "max_length"):
            check_positive_int(arg, getattr(self, arg))
        self.mask_zero, self.learned_positions = mask_zero, learned_positions
        self.scale_embeddings = scale_embeddings
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.supports_masking = True

    def build(self, input_shape=None):
        dtype, init = self.dtype_policy, self.embeddings_initializer
        self.token_embedding = keras.layers.Embedding(
            self.vocab_size, self.d_model, init, dtype=dtype, name="token_embedding"
        )
        self.token_embedding.build((None, None))
        if self.learned_positions:
            self.position_embedding = keras.layers.Embedding(
                self.max_length, self.d_model, dtype=dtype, name="position_embedding"
            )
            self.position_embedding.build((None, None))
        else:
            # A constant, not a weight: it is rebuilt from the config on load.
            self.position_table = positional_encoding(self.max_length, self.d_model)

    def call(self, inputs, start_index=0, reverse=False):
        if reverse:
            # (batch, seq_len, d_model) @ (d_model, vocab) -> (batch, seq_len, vocab)
            matrix = ops.cast(self.token_embedding.embeddings, inputs.dtype)
            return ops.cast(ops.matmul(inputs, ops.transpose(matrix)), "float32")
        x = self.token_embedding(inputs)  # (batch, seq_len, d_model)
        if self.scale_embeddings:
            x = x * ops.cast(math.sqrt(self.d_model), x.dtype)
        positions = ops.arange(ops.shape(inputs)[1], dtype="int32") + ops.cast(start_index, "int32")
        if self.learned_positions:
            pos = self.position_embedding(positions)  # (seq_len, d_model)
        else:
            pos = ops.take(ops.convert_to_tensor(self.position_table), positions, axis=0)
        return x + ops.cast(ops.expand_dims(pos, 0), x.dtype)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        if "int" not in keras.backend.standardize_dtype(inputs.dtype):
            return mask  # reverse call on hidden states: keep the incoming mask
        return ops.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape, reverse=False):
        return (*input_shape[:-1], self.vocab_size) if reverse else (*input_shape, self.d_model)

    def compute_output_spec(self, inputs, start_index=0, reverse=False):
        dtype = "float32" if reverse else self.compute_dtype
        return keras.KerasTensor(self.compute_output_shape(inputs.shape, reverse), dtype)

    def get_config(self):
        names = "vocab_size d_model max_length mask_zero learned_positions scale_embeddings".split()
        initializer = keras.initializers.serialize(self.embeddings_initializer)
        config = {n: getattr(self, n) for n in names}
        return {**super().get_config(), **config, "embeddings_initializer": initializer}
