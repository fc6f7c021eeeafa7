"""Functional builders; each takes `config=TransformerConfig(...)` and/or its fields as keywords.

The names load on first use (PEP 562), so `keras_transformer.models.config` and
`keras_transformer.models.parameters` import without Keras.
"""

from keras_transformer._lazy import lazy_names

_HOMES = {
    "TransformerConfig": "config",
    "build_classifier": "classifier",
    "build_cnn_seq2seq": "baselines",
    "build_decoder": "decoder",
    "build_dual_encoder": "dual_encoder",
    "build_encoder": "encoder",
    "build_language_model": "language_model",
    "build_masked_language_model": "masked_language_model",
    "build_rnn_seq2seq": "baselines",
    "build_token_classifier": "token_classifier",
    "build_transformer": "transformer",
    "layer_tree": "inspection",
    "transfer_weights": "transfer",
}

__all__ = sorted(_HOMES)


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
