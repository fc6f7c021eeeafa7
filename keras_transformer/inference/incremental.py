"""Step-by-step decoding with a trained encoder-decoder, with or without a KV cache.

`IncrementalDecoder` takes a model from `build_transformer` apart by layer name
(`encoder_*`, `decoder_embedding` or `shared_embedding`, `decoder_layer_{i}`,
`decoder_final_norm`, `logits`) and exposes the three operations a search
needs, all made of TensorFlow ops so they run inside one `tf.function`:

- `encode(source)`: the encoder runs once per batch;
- `initial_state(...)`: per decoder layer, the cross-attention keys and values
  of the encoder output (computed once) and an empty self-attention cache;
- `step(tokens, index, state)`: next-token logits at position `index`.

With `use_cache=True` a step embeds only the token at `index`, writes its
keys and values into each layer's cache at `index`, and attends over the
cache: O(1) new positions per step. With `use_cache=False` a step re-runs the
whole decoder on the prefix `tokens[:, :index + 1]` generated so far and reads
its last position (the plain path, kept for teaching and for comparison): O(t)
positions at step t. XLA needs static shapes, so with `static_shapes=True` the
plain path runs over the whole `max_length` buffer instead (causal masking makes
the positions after `index` irrelevant, at the cost of computing them). All
three give the same tokens.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from keras_transformer.layers import PositionalEmbedding


def _is_int(value) -> bool:
    """True for Python and NumPy integers, False for bools, floats and the rest."""
    return not isinstance(value, bool) and hasattr(value, "__index__")


def position_limit(model: keras.Model) -> int | None:
    """Positions the model can embed: the smallest `max_length` of its
    `PositionalEmbedding` layers (None if it has none)."""
    limits = [layer.max_length for layer in model.layers if isinstance(layer, PositionalEmbedding)]
    return min(limits) if limits else None


class IncrementalDecoder:
    """Encoder once, then decoder steps, on the layers of a trained Transformer.

    Args:
        model: a model made by `keras_transformer.models.build_transformer`.
        max_length: number of decoder positions (cache length), `[START]` included;
            at least 2 and at most the model's position table (the `max_length`
            it was built with).
        use_cache: keep keys/values of past positions instead of recomputing them.
        static_shapes: keep every shape fixed, as XLA needs: without the cache,
            re-run the decoder on the whole `max_length` buffer instead of the
            prefix; with it, attend over the whole cache (positions not yet
            written are masked) instead of the positions filled so far.

    Example:

    >>> import numpy as np
    >>> from keras_transformer.models import build_transformer
    >>> model = build_transformer(20, 30, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> decoder = IncrementalDecoder(model, max_length=6)
    >>> context, mask = decoder.encode(np.array([[2, 7, 3]]))
    >>> state = decoder.initial_state(context, mask)
    >>> tokens = np.zeros((1, 6), "int32"); tokens[:, 0] = 2
    >>> logits, state = decoder.step(tokens, 0, state)
    >>> tuple(logits.shape)
    (1, 30)
    """

    def __init__(
        self,
        model: keras.Model,
        max_length: int,
        use_cache: bool = True,
        static_shapes: bool = False,
    ):
        if not _is_int(max_length) or max_length < 2:
            raise ValueError(
                f"max_length must be an integer >= 2 ([START] and one generated token); "
                f"received max_length={max_length!r}."
            )
        max_length = int(max_length)
        limit = position_limit(model)
        if limit is not None and max_length > limit:
            raise ValueError(
                f"max_length={max_length} exceeds the model's position table of {limit} "
                f"positions (the max_length it was built with); pass max_length <= {limit}."
            )
        names = {layer.name for layer in model.layers}
        if "decoder_layer_0" not in names:
            raise ValueError(
                "IncrementalDecoder needs a model made by build_transformer or "
                "build_language_model (layers 'decoder_layer_0', ...); received a model named "
                f"{model.name!r} with layers {sorted(names)[:6]}..."
            )
        # A decoder-only model (build_language_model) has no encoder and no cross-attention.
        self.has_encoder = "encoder_layer_0" in names
        self.model = model
        self.max_length = int(max_length)
        self.use_cache = use_cache
        self.static_shapes = static_shapes
        self.num_layers = sum(1 for n in names if n.startswith("decoder_layer_"))
        self.layers = [model.get_layer(f"decoder_layer_{i}") for i in range(self.num_layers)]
        shared = "shared_embedding" in names
        self.embedding = model.get_layer("shared_embedding" if shared else "decoder_embedding")
        # Without a "logits" layer the token matrix is the output projection (tied).
        self.output_layer = model.get_layer("logits") if "logits" in names else None
        self.final_norm = (
            model.get_layer("decoder_final_norm") if "decoder_final_norm" in names else None
        )
        if self.has_encoder:
            num_encoder = sum(1 for n in names if n.startswith("encoder_layer_"))
            last = (
                "encoder_final_norm"
                if "encoder_final_norm" in names
                else f"encoder_layer_{num_encoder - 1}"
            )
            self.encoder = keras.Model(model.input["source"], model.get_layer(last).output)
        attention = self.layers[0].self_attention.attention
        self.num_heads, self.key_dim = attention.num_heads, attention.key_dim

    def encode(self, source):
        """Source ids `(batch, src_len)` -> (context `(batch, src_len, d_model)`, mask)."""
        if not self.has_encoder:
            raise ValueError(
                "a decoder-only model has no encoder; use initial_state(batch_size=...)."
            )
        source = tf.convert_to_tensor(source, tf.int32)
        return self.encoder(source, training=False), tf.not_equal(source, 0)

    def initial_state(self, context=None, source_mask=None, batch_size=None) -> dict:
        """Per-batch decoding state: context, its mask, cross and self caches.

        For a decoder-only model pass `batch_size` instead of the context.
        """
        state = {}
        if self.has_encoder:
            state = {"context": context, "source_mask": source_mask}
            batch_size = tf.shape(context)[0]
        if self.use_cache:
            dtype = self.embedding.compute_dtype
            # One tensor per layer (a tuple, not a stacked tensor: stacking would copy
            # every cache at every step).
            if self.has_encoder:
                state["cross"] = tuple(
                    layer.cross_attention_block.compute_cache(context) for layer in self.layers
                )  # each (batch, 2, src_len, heads, key_dim)
                dtype = state["cross"][0].dtype
            shape = [batch_size, 2, self.max_length, self.num_heads, self.key_dim]
            state["self"] = tuple(
                tf.zeros(shape, dtype=dtype) for _ in self.layers
            )  # each (batch, 2, max_length, heads, key_dim)
        return state

    def _project(self, x):
        if self.final_norm is not None:
            x = self.final_norm(x)
        if self.output_layer is None:
            return self.embedding(x, reverse=True)
        return self.output_layer(x)

    def step(self, tokens, index, state):
        """Logits `(batch, vocab)` for position `index + 1`, given `tokens[:, :index + 1]`.

        Args:
            tokens: int32 `(batch, max_length)` buffer, `[START]` first, tokens
                after `index` ignored.
            index: position of the newest token (int or scalar tensor).
            state: from `initial_state`, or a previous `step`.

        Returns:
            `(logits, state)`; logits are float32.
        """
        tokens = tf.convert_to_tensor(tokens, tf.int32)
        context = state.get("context")
        source_mask = state.get("source_mask")
        if not self.use_cache:
            if self.static_shapes:
                prefix = tokens  # (batch, max_length): XLA needs one fixed shape
            else:
                prefix = tokens[:, : index + 1]  # (batch, index + 1)
            x = self.embedding(prefix)  # (batch, prefix_len, d_model)
            for layer in self.layers:
                x = layer(x, context, context_padding_mask=source_mask, training=False)
            # only the position read is projected onto the vocabulary
            return self._project(tf.gather(x, [index], axis=1))[:, 0], state
        token = tf.gather(tokens, [index], axis=1)  # (batch, 1)
        x = self.embedding(token, start_index=index)  # (batch, 1, d_model)
        caches = []
        for i, layer in enumerate(self.layers):
            full = state["self"][i]  # (batch, 2, max_length, heads, key_dim)
            # Without XLA the step attends over the index + 1 positions filled so
            # far, not the whole buffer; XLA needs the buffer's one static shape.
            cache = full if self.static_shapes else full[:, :, : index + 1]
            x, cache = layer(
                x,
                None,
                context_padding_mask=source_mask,
                self_attention_cache=cache,
                cross_attention_cache=state["cross"][i] if self.has_encoder else None,
                cache_update_index=index,
                training=False,
            )
            if not self.static_shapes:
                cache = tf.concat([cache, full[:, :, index + 1 :]], axis=2)
                cache.set_shape(full.shape)  # what the concat cannot know statically
            caches.append(cache)
        state = dict(state, self=tuple(caches))
        return self._project(x)[:, 0], state

    @staticmethod
    def reorder(state: dict, indices) -> dict:
        """Select batch rows `indices` of every state tensor (beam search)."""
        return tf.nest.map_structure(lambda value: tf.gather(value, indices), state)
