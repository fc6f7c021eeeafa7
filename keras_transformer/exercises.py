"""Checkers for the pieces of the Transformer a student writes (coursework).

Each checker runs the student's function or Keras `Layer` class on small float32
batches next to `kt.layers` (same weights copied in), probes masking, causality,
padding invariance and scaling, and returns `None` or raises `AssertionError`
naming the mistake and the section of the paper to re-read. Its docstring states
the contract (calls, shapes, weights); the student's code may return NumPy or tensors.

This module is the checkers' public home (the notebooks call `kt.exercises.check_...`);
they live in `keras_transformer.course`: `attention_checks` (notebooks 01-03),
`layer_checks` (04-05), `model_checks` (06-07), `pipeline_checks`, `search_checks` and
`text_checks` (13: the pre-LN layer and perplexity; greedy and beam search; WordPiece and BLEU), `fit_checks` (the graded `model.fit`
assignment), over `checking` (running the student's
code, wording the failure), `references` (NumPy versions) and `diagnosis` (naming the
mistake).

Example:

>>> import numpy as np
>>> from keras_transformer import exercises
>>> def attention(query, key, value, mask=None):
...     scores = query @ np.swapaxes(key, -1, -2) / np.sqrt(query.shape[-1])
...     if mask is not None:
...         scores = np.where(mask, scores, -1e9)
...     weights = np.exp(scores - scores.max(-1, keepdims=True))
...     weights = weights / weights.sum(-1, keepdims=True)
...     return weights @ value, weights
>>> exercises.check_scaled_dot_product_attention(attention)  # silent: no mistake found
"""

from keras_transformer.course.attention_checks import (
    check_multi_head_attention,
    check_positional_encoding,
    check_scaled_dot_product_attention,
)
from keras_transformer.course.checking import CheckFailed, graded
from keras_transformer.course.fit_checks import check_trained_translator
from keras_transformer.course.layer_checks import (
    check_add_norm,
    check_decoder_layer,
    check_encoder_layer,
    check_feed_forward,
)
from keras_transformer.course.model_checks import check_functional_transformer, check_masked_loss
from keras_transformer.course.pipeline_checks import check_perplexity, check_pre_ln_encoder_layer
from keras_transformer.course.search_checks import check_beam_search, check_greedy_search
from keras_transformer.course.text_checks import check_corpus_bleu, check_wordpiece

__all__ = [
    "CheckFailed",
    "check_add_norm",
    "check_beam_search",
    "check_corpus_bleu",
    "check_decoder_layer",
    "check_encoder_layer",
    "check_feed_forward",
    "check_functional_transformer",
    "check_greedy_search",
    "check_masked_loss",
    "check_multi_head_attention",
    "check_perplexity",
    "check_positional_encoding",
    "check_pre_ln_encoder_layer",
    "check_scaled_dot_product_attention",
    "check_trained_translator",
    "check_wordpiece",
    "graded",
]
