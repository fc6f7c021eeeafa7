"""Decoding: greedy and beam search with a key/value cache, and `Translator`.

- `Translator`: strings in, strings out (`Translator.from_run_dir(run_dir)`).
- `IncrementalDecoder`, `greedy_search`, `beam_search`: the pieces it uses.
- `generate`: greedy or sampled continuation with a decoder-only model.
- `greedy_decode`: the plain Python loop that re-runs the full model per step.
- `SentenceEncoder`: sentence vectors from an encoder; ranks candidates by cosine.
"""

from keras_transformer.inference.generation import filter_logits, generate
from keras_transformer.inference.greedy import greedy_decode
from keras_transformer.inference.incremental import IncrementalDecoder
from keras_transformer.inference.search import beam_search, greedy_search
from keras_transformer.inference.sentence_encoder import SentenceEncoder, retrieval_accuracy
from keras_transformer.inference.translator import Translator

__all__ = [
    "IncrementalDecoder",
    "SentenceEncoder",
    "Translator",
    "beam_search",
    "filter_logits",
    "generate",
    "greedy_decode",
    "greedy_search",
    "retrieval_accuracy",
]
