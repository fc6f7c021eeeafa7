"""Decoding: greedy and beam search with a key/value cache, and `Translator`.

- `Translator`: strings in, strings out (`Translator.from_run_dir(run_dir)`).
- `IncrementalDecoder`, `greedy_search`, `beam_search`: the pieces it uses.
- `continue_tokens`: the one decoding loop under all of them.
- `generate`: greedy or sampled continuation with a decoder-only model;
  `translate_by_prefix`: translation with a decoder-only model.
- `greedy_decode`: greedy search on source ids, by default re-running the decoder per step.
- `SentenceEncoder`: sentence vectors from an encoder; ranks candidates by cosine.
"""

from keras_transformer.inference.generation import filter_logits, generate, translate_by_prefix
from keras_transformer.inference.incremental import IncrementalDecoder
from keras_transformer.inference.search import (
    beam_search,
    continue_tokens,
    greedy_decode,
    greedy_search,
)
from keras_transformer.inference.sentence_encoder import (
    SentenceEncoder,
    load_sentence_encoder,
    retrieval_accuracy,
)
from keras_transformer.inference.translator import Translator

__all__ = [
    "IncrementalDecoder",
    "SentenceEncoder",
    "Translator",
    "beam_search",
    "continue_tokens",
    "filter_logits",
    "generate",
    "greedy_decode",
    "greedy_search",
    "load_sentence_encoder",
    "retrieval_accuracy",
    "translate_by_prefix",
]
