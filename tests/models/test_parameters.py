"""Tests for keras_transformer.models.parameters: analytic parameter formulas against built Keras layers."""

import numpy as np

from keras_transformer.layers import DecoderLayer, EncoderLayer, FeedForward, MultiHeadAttention
from keras_transformer.models.parameters import (
    attention_parameters,
    decoder_layer_parameters,
    encoder_layer_parameters,
    feed_forward_parameters,
)


def test_formulas_equal_built_layers():
    x = np.zeros((1, 3, 24), "float32")
    mha = MultiHeadAttention(num_heads=4, key_dim=6)
    mha(x, x)
    assert mha.count_params() == attention_parameters(24, 4)
    ffn = FeedForward(dff=40)
    ffn(x)
    assert ffn.count_params() == feed_forward_parameters(24, 40)
    enc = EncoderLayer(num_heads=4, dff=40)
    enc(x)
    assert enc.count_params() == encoder_layer_parameters(24, 4, 40)
    dec = DecoderLayer(num_heads=4, dff=40)
    dec(x, x)
    assert dec.count_params() == decoder_layer_parameters(24, 4, 40)
    lm = DecoderLayer(num_heads=4, dff=40, use_cross_attention=False)
    lm(x)
    assert lm.count_params() == decoder_layer_parameters(24, 4, 40, cross_attention=False)


def test_attention_with_other_head_size():
    x = np.zeros((1, 3, 10), "float32")
    mha = MultiHeadAttention(num_heads=3, key_dim=7)
    mha(x, x)
    assert mha.count_params() == attention_parameters(10, 3, key_dim=7)
