"""Functional builders; each takes `config=TransformerConfig(...)` and/or its fields as keywords."""

from keras_transformer.models.baselines import build_cnn_seq2seq, build_rnn_seq2seq
from keras_transformer.models.classifier import build_classifier
from keras_transformer.models.config import TransformerConfig
from keras_transformer.models.decoder import build_decoder
from keras_transformer.models.dual_encoder import build_dual_encoder
from keras_transformer.models.encoder import build_encoder
from keras_transformer.models.language_model import build_language_model
from keras_transformer.models.masked_language_model import build_masked_language_model
from keras_transformer.models.token_classifier import build_token_classifier
from keras_transformer.models.transfer import transfer_weights
from keras_transformer.models.transformer import build_transformer

__all__ = [
    "TransformerConfig",
    "build_classifier",
    "build_cnn_seq2seq",
    "build_decoder",
    "build_dual_encoder",
    "build_encoder",
    "build_language_model",
    "build_masked_language_model",
    "build_rnn_seq2seq",
    "build_token_classifier",
    "build_transformer",
    "transfer_weights",
]
