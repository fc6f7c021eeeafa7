"""The layers of a model and the layers inside them, as an indented tree.

`model.summary()` lists a Functional model's own layers (`encoder_layer_0 (EncoderLayer)`, ...);
`model.summary(expand_nested=True)` opens the blocks inside them down to `MultiHeadAttention`,
`FeedForward` and `AddNorm` (`layers._nested`). `layer_tree` opens every level, those included
(`query_dense`, `layer_norm`, ...), as plain text with parameter counts.
"""

import keras


def sublayers(layer: keras.layers.Layer) -> list[keras.layers.Layer]:
    """The layers `layer` holds as attributes, in the order it created them."""
    found, seen = [], set()
    for value in vars(layer).values():
        if isinstance(value, keras.layers.Layer) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    return found


def layer_tree(model: keras.Model, max_depth: int | None = None) -> str:
    """One line per layer, `name (Class) parameters`, sub-layers indented under their owner.

    Args:
        model: any Keras model (or layer).
        max_depth: levels below the model's own layers to open; None opens all.

    Returns:
        The tree as text.

    Example:
    >>> from keras_transformer.models import build_encoder
    >>> encoder = build_encoder(50, num_layers=1, d_model=8, num_heads=2, dff=16, max_length=8)
    >>> print(layer_tree(encoder.get_layer("encoder_layer_0"), max_depth=1))
    encoder_layer_0 (EncoderLayer) 600
      self_attention (SelfAttention) 304
        attention (MultiHeadAttention) 288
        dropout (Dropout) 0
        add_norm (AddNorm) 16
      feed_forward (FeedForwardBlock) 296
        ffn (FeedForward) 280
        dropout (Dropout) 0
        add_norm (AddNorm) 16
    """
    lines = []

    def visit(layer, depth):
        params = layer.count_params() if layer.built else 0
        lines.append(f"{'  ' * depth}{layer.name} ({type(layer).__name__}) {params:,}")
        if max_depth is None or depth <= max_depth:
            for child in sublayers(layer):
                visit(child, depth + 1)

    if isinstance(model, keras.Model) and hasattr(model, "layers") and model.layers:
        for layer in model.layers:
            visit(layer, 0)
    else:
        visit(model, 0)
    return "\n".join(lines)
