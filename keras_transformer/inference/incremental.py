"""Step-by-step decoding with a trained Transformer: with a KV cache a step embeds one
token (O(1) new positions); without, it re-runs the decoder on the prefix (O(t))."""

import keras
import tensorflow as tf

from keras_transformer._validation import check_max_length
from keras_transformer.errors import UserInputError
from keras_transformer.layers import PositionalEmbedding


def position_limit(model: keras.Model) -> int | None:
    """Positions the model can embed: its smallest `PositionalEmbedding.max_length`, or None."""
    limits = [layer.max_length for layer in model.layers if isinstance(layer, PositionalEmbedding)]
    return min(limits) if limits else None


class IncrementalDecoder:
    """Encoder once, then decoder steps, on the layers (found by name) of a trained model.

    Args:
        model: a `build_transformer` (or `build_language_model`) model.
        max_length: decoder positions (cache length) with `[START]`, in [2, positions].
        use_cache: keep keys/values of past positions instead of recomputing them.
        static_shapes: fixed shapes for XLA: the whole buffer or cache, not the prefix.

    Example:
    >>> import numpy as np
    >>> from keras_transformer.models import build_transformer
    >>> model = build_transformer(20, 30, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> decoder = IncrementalDecoder(model, max_length=6)
    >>> state = decoder.initial_state(*decoder.encode(np.array([[2, 7, 3]])))
    >>> logits, state = decoder.step(np.array([[2, 0, 0, 0, 0, 0]]), 0, state)
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
        check_max_length(max_length)
        self.max_length = max_length = int(max_length)
        if (limit := position_limit(model)) is not None and max_length > limit:
            raise UserInputError(
                f"max_length={max_length} exceeds the model's position table of "
                f"{limit} positions (the max_length it was built with); pass "
                f"max_length <= {limit}."
            )
        names = {layer.name: layer for layer in model.layers}
        if "decoder_layer_0" not in names:
            raise ValueError(
                f"IncrementalDecoder needs a model made by build_transformer or "
                f"build_language_model (layers 'decoder_layer_0', ...); received a "
                f"model named {model.name!r} with layers {sorted(names)[:6]}..."
            )
        # A decoder-only model (build_language_model) has no encoder and no cross-attention.
        self.has_encoder = "encoder_layer_0" in names
        self.model, self.use_cache, self.static_shapes = model, use_cache, static_shapes
        self.num_layers = sum(1 for n in names if n.startswith("decoder_layer_"))
        self.layers = [names[f"decoder_layer_{i}"] for i in range(self.num_layers)]
        self.embedding = names.get("shared_embedding") or model.get_layer("decoder_embedding")
        self.output_layer, self.final_norm = names.get("logits"), names.get("decoder_final_norm")
        if self.has_encoder:
            num_encoder = sum(1 for n in names if n.startswith("encoder_layer_"))
            last = names.get("encoder_final_norm") or names[f"encoder_layer_{num_encoder - 1}"]
            self.encoder = keras.Model(model.input["source"], last.output)
        attention = self.layers[0].self_attention.attention  # the block's MultiHeadAttention
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
        """Per-batch state: context, mask, cross and self caches (decoder-only: `batch_size`)."""
        state = {"context": context, "source_mask": source_mask} if self.has_encoder else {}
        batch_size = tf.shape(context)[0] if self.has_encoder else batch_size
        if self.use_cache:
            dtype = self.embedding.compute_dtype
            # One tensor per layer (a tuple: stacking would copy every cache every step).
            if self.has_encoder:
                state["cross"] = tuple(
                    layer.cross_attention.compute_cache(context) for layer in self.layers
                )  # each (batch, 2, src_len, heads, key_dim)
                dtype = state["cross"][0].dtype
            shape = [batch_size, 2, self.max_length, self.num_heads, self.key_dim]  # each layer's
            state["self"] = tuple(tf.zeros(shape, dtype=dtype) for _ in self.layers)
        return state

    def _project(self, x):
        x = x if self.final_norm is None else self.final_norm(x)
        if self.output_layer is None:  # tied: the token matrix is the output projection
            return self.embedding(x, reverse=True)
        return self.output_layer(x)

    def step(self, tokens, index, state):
        """Logits `(batch, vocab)` for position `index + 1`, given `tokens[:, :index + 1]`.

        Args:
            tokens: int32 `(batch, max_length)`, `[START]` first, after `index` ignored.
            index: position of the newest token (int or scalar tensor).
            state: from `initial_state`, or a previous `step`.

        Returns:
            `(logits, state)`, logits float32.
        """
        tokens, source_mask = tf.convert_to_tensor(tokens, tf.int32), state.get("source_mask")
        if not self.use_cache:
            # (batch, max_length) under XLA (one fixed shape), else (batch, index + 1)
            prefix = tokens if self.static_shapes else tokens[:, : index + 1]
            x = self.embedding(prefix)  # (batch, prefix_len, d_model)
            for layer in self.layers:
                x = layer(x, state.get("context"), context_padding_mask=source_mask, training=False)
            # only the position read is projected onto the vocabulary
            return self._project(tf.gather(x, [index], axis=1))[:, 0], state
        token = tf.gather(tokens, [index], axis=1)  # (batch, 1)
        x = self.embedding(token, start_index=index)  # (batch, 1, d_model)
        caches = []
        for i, layer in enumerate(self.layers):
            full = state["self"][i]  # (batch, 2, max_length, heads, key_dim)
            # Attend over the index + 1 positions filled so far (XLA: the whole static buffer).
            cache = full if self.static_shapes else full[:, :, : index + 1]
            cross = state["cross"][i] if self.has_encoder else None
            x, cache = layer.call_with_cache(
                x,
                self_attention_cache=cache,
                cache_update_index=index,
                cross_attention_cache=cross,
                context_padding_mask=source_mask,
            )
            if not self.static_shapes:
                cache = tf.concat([cache, full[:, :, index + 1 :]], axis=2)
                cache.set_shape(full.shape)  # what the concat cannot know statically
            caches.append(cache)
        return self._project(x)[:, 0], dict(state, self=tuple(caches))

    @staticmethod
    def reorder(state: dict, indices) -> dict:
        """Select batch rows `indices` of every state tensor (beam search)."""
        return tf.nest.map_structure(lambda value: tf.gather(value, indices), state)
