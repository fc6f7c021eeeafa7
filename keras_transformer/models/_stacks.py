"""Shared Functional wiring of the stacks; layer names (`encoder_layer_0`...) are API."""

import keras

from keras_transformer._validation import check_positive_int
from keras_transformer.layers import DecoderLayer, EncoderLayer, PaddingMask, PositionalEmbedding
from keras_transformer.models.config import TransformerConfig


def token_input(name: str) -> keras.KerasTensor:
    """`keras.Input` for int32 token ids `(batch, seq_len)` of any length."""
    return keras.Input(shape=(None,), dtype="int32", name=name)


def embedding(vocab_size: int, cfg: TransformerConfig, name: str) -> PositionalEmbedding:
    check_positive_int(f"{name} vocab_size", vocab_size)
    sizes = {"max_length": cfg.max_length, "learned_positions": cfg.learned_positions}
    # mask_zero=False: padding masks are explicit (PaddingMask), never propagated
    return PositionalEmbedding(vocab_size, cfg.d_model, mask_zero=False, name=name, **sizes)


def embed(ids, embedding_layer, cfg: TransformerConfig, prefix: str):
    """Ids -> (explicit padding mask, dropped-out embeddings)."""
    padding_mask = PaddingMask(name=f"{prefix}_padding_mask")(ids)  # (batch, seq_len)
    x = embedding_layer(ids)  # (batch, seq_len, d_model)
    return padding_mask, keras.layers.Dropout(cfg.dropout, name=f"{prefix}_embedding_dropout")(x)


def final_norm(x, cfg: TransformerConfig, prefix: str):
    """Pre-LN stacks end with one more LayerNorm; post-LN stacks already did."""
    if cfg.norm_first:
        x = keras.layers.LayerNormalization(epsilon=1e-6, name=f"{prefix}_final_norm")(x)
    return x


def encoder_stack(x, padding_mask, cfg: TransformerConfig, scores: dict | None, prefix="encoder"):
    """`num_layers` EncoderLayers; records self-attention weights in `scores`."""
    for i in range(cfg.num_layers):
        name = f"{prefix}_layer_{i}"
        x = EncoderLayer(**cfg.layer_kwargs(), name=name)(
            x, padding_mask=padding_mask, return_attention_scores=scores is not None
        )
        if scores is not None:
            x, scores[f"{name}_self_attention"] = x
    return final_norm(x, cfg, prefix)


def decoder_stack(
    x, padding_mask, context, context_padding_mask, cfg: TransformerConfig, scores, prefix="decoder"
):
    """`num_layers` DecoderLayers (no cross-attention when `context` is None)."""
    for i in range(cfg.num_layers):
        name = f"{prefix}_layer_{i}"
        layer = DecoderLayer(
            **cfg.layer_kwargs(), use_cross_attention=context is not None, name=name
        )
        x = layer(
            x,
            context,
            padding_mask=padding_mask,
            context_padding_mask=context_padding_mask,
            return_attention_scores=scores is not None,
        )
        if scores is not None:
            x, layer_scores = x
            scores.update({f"{name}_{kind}": value for kind, value in layer_scores.items()})
    return final_norm(x, cfg, prefix)


def outputs(logits, scores: dict | None):
    """The model's outputs: logits alone, or a dict with the attention weights."""
    return logits if scores is None else {"logits": logits, **scores}


def logits(x, vocab_size: int, tied_embedding=None, name="logits"):
    """Float32 logits `(batch, seq_len, vocab_size)`: `Dense`, or `x @ E^T` of `tied_embedding`."""
    if tied_embedding is not None:
        return tied_embedding(x, reverse=True)
    return keras.layers.Dense(vocab_size, dtype="float32", name=name)(x)
