"""The weight layout of saved encoder and decoder layers, and the error for older ones.

Version 2 (keras_transformer 0.2.0): each layer is made of blocks (`SelfAttention`,
`CrossAttention`, `FeedForwardBlock`), each owning its `AddNorm`. Version 1 (0.1.x) kept the
LayerNorms and dropouts beside the attention in the layer itself, so its saved weights have other
names; Keras would stop with a long list of missing variables. This says what happened instead.
"""

from keras_transformer.errors import OldWeightsLayoutError

WEIGHTS_LAYOUT = 2


def weights_layout_config() -> dict:
    return {"weights_layout": WEIGHTS_LAYOUT}


def check_weights_layout(class_name: str, config: dict) -> dict:
    """`config` without its `weights_layout`; `OldWeightsLayoutError` for an older layout."""
    config = dict(config)
    layout = config.pop("weights_layout", 1)
    if layout != WEIGHTS_LAYOUT:
        raise OldWeightsLayoutError(
            f"this model was saved by keras_transformer 0.1 (its {class_name} has weight layout "
            f"{layout}; this version, 0.2, reads layout {WEIGHTS_LAYOUT}, whose layers are built "
            "from SelfAttention, CrossAttention and FeedForwardBlock). Train it again with this "
            "version, or load it with `pip install keras_transformer==0.1.0`."
        )
    return config
