"""Transformer layers, one public layer per file, each registered for `safe_mode=True` loading."""

from keras_transformer.layers.add_norm import AddNorm
from keras_transformer.layers.apply_padding_mask import ApplyPaddingMask
from keras_transformer.layers.attention import MultiHeadAttention, scaled_dot_product_attention
from keras_transformer.layers.attention_blocks import CrossAttention, SelfAttention
from keras_transformer.layers.decoder_layer import DecoderLayer
from keras_transformer.layers.encoder_layer import EncoderLayer
from keras_transformer.layers.feed_forward import FeedForward
from keras_transformer.layers.feed_forward_block import FeedForwardBlock
from keras_transformer.layers.in_batch_similarity import InBatchSimilarity
from keras_transformer.layers.padding_mask import PaddingMask
from keras_transformer.layers.positional_embedding import PositionalEmbedding, positional_encoding
from keras_transformer.layers.sequence_pooling import SequencePooling

__all__ = [
    "ApplyPaddingMask",
    "AddNorm",
    "CrossAttention",
    "DecoderLayer",
    "EncoderLayer",
    "FeedForward",
    "FeedForwardBlock",
    "InBatchSimilarity",
    "MultiHeadAttention",
    "PaddingMask",
    "PositionalEmbedding",
    "SelfAttention",
    "SequencePooling",
    "positional_encoding",
    "scaled_dot_product_attention",
]
