"""Seeing a model and a measurement: every figure and the attention explorer, in one place.

- `figures`: the figures of a training run (history, learning rate, attention heat maps) and
  the `figure` / `save` helpers, each figure on its own matplotlib `Figure` (no pyplot, no
  backend change); also reachable as `kt.plots`.
- `comparison_figures`: the figures of `keras-transformer compare`.
- `attention_maps`: a trained model's attention weights, read through a probe with the same
  weights, as `figures.plot_attention` draws them.
- `attention_page`: the attention explorer, one self-contained HTML page of a trained model's
  attention weights (`keras-transformer attention`); also `keras_transformer.attention_page`.

Imports nothing on its own: matplotlib and TensorFlow load with the module that needs them.
"""
