"""Analytic parameter counts of the package's models (checked against Keras; no Keras import)."""


def attention_parameters(d_model: int, num_heads: int, key_dim: int | None = None) -> int:
    """Multi-head attention: Q, K, V projections to `num_heads * key_dim` and back.

    `4 * d_model * (h * d_k) + 3 * (h * d_k) + d_model` (weights plus biases);
    with `h * d_k = d_model` that is `4 * (d_model^2 + d_model)`.
    """
    inner = num_heads * (key_dim if key_dim is not None else d_model // num_heads)
    return 4 * d_model * inner + 3 * inner + d_model


def feed_forward_parameters(d_model: int, dff: int) -> int:
    """Two dense layers `d_model -> dff -> d_model` with biases."""
    return d_model * dff + dff + dff * d_model + d_model


def layer_norm_parameters(d_model: int) -> int:
    """LayerNorm's scale and offset."""
    return 2 * d_model


def encoder_layer_parameters(d_model: int, num_heads: int, dff: int) -> int:
    """Self-attention + feed-forward, each with its LayerNorm."""
    return decoder_layer_parameters(d_model, num_heads, dff, cross_attention=False)


def decoder_layer_parameters(d_model: int, num_heads: int, dff: int, cross_attention=True) -> int:
    """Causal self-attention (+ cross-attention) + feed-forward, each with its LayerNorm."""
    norm, blocks = layer_norm_parameters(d_model), 2 if cross_attention else 1
    attention = attention_parameters(d_model, num_heads) + norm
    return blocks * attention + feed_forward_parameters(d_model, dff) + norm


def transformer_parameters(
    source_vocab_size: int,
    target_vocab_size: int,
    *,
    num_layers: int = 4,
    d_model: int = 128,
    num_heads: int = 8,
    dff: int = 512,
    max_length: int = 512,
    share_embeddings: bool = False,
    norm_first: bool = False,
    learned_positions: bool = False,
) -> int:
    """Parameters of `build_transformer` with the same arguments.

    Embeddings (`V * d_model` each; one shared matrix with `share_embeddings`, which is also
    the bias-free output projection), the layers, the output projection `d_model * V_t + V_t`,
    a final LayerNorm per stack in pre-LN, and `max_length * d_model` per learned position
    table (the sinusoid has none).

    Example:
    >>> transformer_parameters(37000, 37000, num_layers=6, d_model=512, num_heads=8,
    ...                        dff=2048, share_embeddings=True)
    63082496
    """
    layers = encoder_layer_parameters(d_model, num_heads, dff)
    count = num_layers * (layers + decoder_layer_parameters(d_model, num_heads, dff))
    if share_embeddings:
        count += source_vocab_size * d_model
    else:
        count += (source_vocab_size + target_vocab_size) * d_model
        count += d_model * target_vocab_size + target_vocab_size
    if learned_positions:
        count += (1 if share_embeddings else 2) * max_length * d_model
    if norm_first:
        count += 2 * layer_norm_parameters(d_model)
    return count
