"""Token embedding plus position information (section 3.5 of the paper)."""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import ops

from keras_transformer._validation import check_positive_int


def positional_encoding(length: int, depth: int) -> np.ndarray:
    r"""The paper's sinusoidal position encoding, shape `(length, depth)`.

    Section 3.5, with $d$ = `depth`:

    $$PE_{(pos,\,2i)} = \sin\left(pos / 10000^{2i/d}\right), \quad
    PE_{(pos,\,2i+1)} = \cos\left(pos / 10000^{2i/d}\right):$$

    even columns hold sines and
    odd columns cosines of the same frequency, interleaved as in the paper (the
    TensorFlow tutorial concatenates all sines then all cosines, an equivalent
    permutation of the columns). Each pair of columns is a rotation at its own
    frequency, so the encoding of `pos + k` is a linear function of that of
    `pos`; wavelengths run from 2*pi to 10000*2*pi.

    Args:
        length: number of positions.
        depth: size of each encoding (`d_model`); may be odd.

    Returns:
        float32 NumPy array `(length, depth)` with values in [-1, 1].

    Example:

    >>> pe = positional_encoding(length=50, depth=16)
    >>> pe.shape
    (50, 16)
    >>> pe[0, :4].tolist()  # position 0: sin(0)=0, cos(0)=1
    [0.0, 1.0, 0.0, 1.0]

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

    Self-attention is permutation-equivariant: without position information a
    Transformer cannot tell "dog bites man" from "man bites dog". This layer
    adds the paper's fixed sinusoid (or, with `learned_positions=True`, a
    trainable position embedding) to the token embedding. The token embedding
    is multiplied by $\sqrt{d_{model}}$ (section 3.4) so that it is not drowned by
    the position signal, whose entries are of size 1.

    Masking: with `mask_zero=True` (the default) token id 0 is padding and the
    layer returns the boolean mask `ids != 0`, propagated by Keras.

    Step-by-step decoding embeds a single new token at its absolute position:
    pass `start_index` (a Python int or scalar tensor).

    The token matrix can also serve as the pre-softmax projection (shared
    embeddings, section 3.4): `layer(hidden, reverse=True)` returns float32
    logits `hidden @ E^T` of shape `(batch, seq_len, vocab_size)`.

    Args:
        vocab_size: number of token ids.
        d_model: embedding size.
        max_length: largest number of positions (size of the position table).
        mask_zero: treat id 0 as padding and produce a mask.
        learned_positions: learn position embeddings instead of the sinusoid.
        scale_embeddings: multiply token embeddings by sqrt(d_model).
        embeddings_initializer: initializer of the token matrix.

    Call arguments:
        inputs: int ids `(batch, seq_len)`; with `reverse=True`, hidden states
            `(batch, seq_len, d_model)`.
        start_index: absolute position of `inputs[:, 0]`, default 0.
        reverse: project hidden states onto the vocabulary instead.

    Returns:
        `(batch, seq_len, d_model)` embeddings (or logits when `reverse=True`).

    Example:

    >>> import numpy as np
    >>> layer = PositionalEmbedding(vocab_size=10, d_model=8, max_length=16)
    >>> ids = np.array([[5, 3, 0]])
    >>> tuple(layer(ids).shape)
    (1, 3, 8)
    >>> np.asarray(layer.compute_mask(ids)).tolist()
    [[True, True, False]]

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
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_positive_int("max_length", max_length)
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.max_length = max_length
        self.mask_zero = mask_zero
        self.learned_positions = learned_positions
        self.scale_embeddings = scale_embeddings
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)
        self.supports_masking = True

    def build(self, input_shape=None):
        self.token_embedding = keras.layers.Embedding(
            self.vocab_size,
            self.d_model,
            embeddings_initializer=self.embeddings_initializer,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.token_embedding.build((None, None))
        if self.learned_positions:
            self.position_embedding = keras.layers.Embedding(
                self.max_length, self.d_model, dtype=self.dtype_policy, name="position_embedding"
            )
            self.position_embedding.build((None, None))
        else:
            # A constant, not a weight: it is rebuilt from the config on load.
            self.position_table = positional_encoding(self.max_length, self.d_model)

    def call(self, inputs, start_index=0, reverse=False):
        if reverse:
            # (batch, seq_len, d_model) @ (d_model, vocab) -> (batch, seq_len, vocab)
            matrix = ops.cast(self.token_embedding.embeddings, inputs.dtype)
            logits = ops.matmul(inputs, ops.transpose(matrix))
            return ops.cast(logits, "float32")
        x = self.token_embedding(inputs)  # (batch, seq_len, d_model)
        if self.scale_embeddings:
            x = x * ops.cast(math.sqrt(self.d_model), x.dtype)
        seq_len = ops.shape(inputs)[1]
        positions = ops.arange(seq_len, dtype="int32") + ops.cast(start_index, "int32")
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
        if reverse:
            return tuple(input_shape[:-1]) + (self.vocab_size,)
        return tuple(input_shape) + (self.d_model,)

    def compute_output_spec(self, inputs, start_index=0, reverse=False):
        if reverse:
            return keras.KerasTensor(self.compute_output_shape(inputs.shape, True), "float32")
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "d_model": self.d_model,
                "max_length": self.max_length,
                "mask_zero": self.mask_zero,
                "learned_positions": self.learned_positions,
                "scale_embeddings": self.scale_embeddings,
                "embeddings_initializer": keras.initializers.serialize(self.embeddings_initializer),
            }
        )
        return config
