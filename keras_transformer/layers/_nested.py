"""Keras-compatibility plumbing of the blocks that hold other layers, kept apart from their math.

`model.summary(expand_nested=True)` opens any layer that has a non-empty `layers` attribute
(Keras 3.15, `keras/src/utils/summary_utils.py`), as it opens a nested `keras.Model`. The taught
blocks (`EncoderLayer`, `DecoderLayer`, `SelfAttention`, `CrossAttention`, `FeedForwardBlock`)
list their sub-layers there, so the summary shows the `MultiHeadAttention`, `AddNorm` and
`FeedForward` inside them. `layers` is left out of `dir()`: Keras's `.keras` saving walks an
object's attributes by `dir()`, so the weights keep their paths (`.../self_attention/...`, not
`.../layers/...`) and files saved before load unchanged.
"""

import keras


class ShowsSublayers:
    """Mixin for a `keras.layers.Layer`: `layers` lists the sub-layers it holds as attributes,
    in the order it created them (empty until built)."""

    @property
    def layers(self) -> list[keras.layers.Layer]:
        found, seen = [], set()
        for value in vars(self).values():
            if isinstance(value, keras.layers.Layer) and id(value) not in seen:
                seen.add(id(value))
                found.append(value)
        return found

    def __dir__(self):
        return [name for name in super().__dir__() if name != "layers"]
