"""Peer implementations of the same encoder-decoder, for the benchmarks.

The builders live in `keras_transformer.benchmarking` (so that
`keras-transformer benchmark` can use them from an installed package); this
module keeps the names the scripts and notes have used:

- `build_keras_mha_transformer`: post-LN blocks made of
  `keras.layers.MultiHeadAttention`, `Add`, `LayerNormalization` and `Dense`,
  padding masks passed explicitly;
- `build_keras_hub_transformer`: KerasHub's `TransformerEncoder` /
  `TransformerDecoder` (raises ImportError with the install command when
  KerasHub is missing; `keras_hub_available()` tells beforehand);
- `build_tutorial_transformer`: the `keras_mha` blocks with the TensorFlow
  tutorial's head size (every head `d_model` wide).

All take the arguments of `build_transformer` and return a Functional model
with the same inputs, embeddings and output projection, so a speed difference
comes from the encoder and decoder blocks alone.
"""

from __future__ import annotations

from keras_transformer.benchmarking import (
    BUILDERS,
    build_keras_hub_transformer,
    build_keras_mha_transformer,
    build_tutorial_transformer,
    keras_hub_available,
)

__all__ = [
    "BUILDERS",
    "build_keras_hub_transformer",
    "build_keras_mha_transformer",
    "build_tutorial_transformer",
    "keras_hub_available",
]
