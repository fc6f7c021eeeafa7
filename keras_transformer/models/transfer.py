"""Moving pre-trained weights between models that share layer names."""

import keras

from keras_transformer.errors import UserInputError


def transfer_weights(source: keras.Model, target: keras.Model) -> list[str]:
    """Copies weights from `source` into same-named layers of `target` (an encoder; heads stay new).

    Args:
        source, target: the trained model; the (built) model to initialise.

    Returns:
        The names of the layers copied, in `target`'s order.

    Raises:
        ValueError: if no layer with weights is shared, or shapes differ.

    Example:
    >>> from keras_transformer.models import build_classifier, build_masked_language_model
    >>> sizes = dict(num_layers=1, d_model=16, num_heads=2, dff=32)
    >>> mlm = build_masked_language_model(50, **sizes)
    >>> transfer_weights(mlm, build_classifier(50, 2, **sizes))
    ['encoder_embedding', 'encoder_layer_0']
    """
    own = {layer.name: layer for layer in source.layers if layer.weights}
    copied = []
    for layer in target.layers:
        if not layer.weights or layer.name not in own:
            continue
        weights = own[layer.name].get_weights()
        expected = [tuple(w.shape) for w in layer.weights]
        received = [tuple(w.shape) for w in weights]
        if expected != received:
            raise UserInputError(
                f"layer {layer.name!r} has weights of shapes {received} in {source.name!r} "
                f"but {expected} in {target.name!r}; build both models with the same sizes "
                "(vocab_size, d_model, num_heads, dff, max_length)."
            )
        layer.set_weights(weights)
        copied.append(layer.name)
    if not copied:
        raise UserInputError(
            f"{source.name!r} and {target.name!r} share no layer with weights; transfer_weights "
            "matches layers by name (e.g. 'encoder_layer_0')."
        )
    return copied
