"""A copy of the `tiny_run` directory whose model gives varied, input-dependent output.

The untrained tiny model emits the same token for every input, so "A equals B"
checks on it would pass trivially. Random N(0, 1) matrices (seed 1) and a
raised `[END]` bias make translations differ between inputs, repeat tokens,
separate words and end at different steps.
"""

from __future__ import annotations

import shutil

import keras
import numpy as np


def make_varied_run(tiny_run, destination, raise_end: bool = True):
    """Copy `tiny_run` to `destination` with scrambled model weights; returns `destination`.

    `raise_end=False` keeps the output layer's biases as drawn (models whose
    output layer is not named "logits", or that should run long).
    """
    shutil.copytree(tiny_run, destination)
    model = keras.models.load_model(destination / "model.keras", safe_mode=True, compile=False)
    rng = np.random.default_rng(1)
    model.set_weights(
        [
            w if w.ndim < 2 else rng.normal(0, 1, w.shape).astype(w.dtype)
            for w in model.get_weights()
        ]
    )
    if raise_end:
        kernel, bias = model.get_layer("logits").get_weights()
        bias[3] += 3.0  # [END]
        model.get_layer("logits").set_weights([kernel, bias])
    model.save(destination / "model.keras")
    return destination
