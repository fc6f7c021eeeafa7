"""Decoding: `Translator`, the searches under it, `generate`, and `SentenceEncoder`."""

from keras_transformer.inference.generation import filter_logits, generate, translate_by_prefix
from keras_transformer.inference.incremental import IncrementalDecoder
from keras_transformer.inference.search import (
    beam_search,
    beam_search_ranked,
    continue_tokens,
    greedy_decode,
    greedy_search,
)
from keras_transformer.inference.sentence_encoder import (
    SentenceEncoder,
    load_sentence_encoder,
    retrieval_accuracy,
)
from keras_transformer.inference.translator import Translator, resolve_jit_compile

__all__ = [
    "IncrementalDecoder",
    "SentenceEncoder",
    "Translator",
    "beam_search",
    "beam_search_ranked",
    "continue_tokens",
    "filter_logits",
    "generate",
    "greedy_decode",
    "greedy_search",
    "load_sentence_encoder",
    "resolve_jit_compile",
    "retrieval_accuracy",
    "translate_by_prefix",
]
