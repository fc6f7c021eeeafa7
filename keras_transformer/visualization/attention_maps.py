"""Attention weights of a trained model, read through a probe of the same weights.

The probe is the same builder with `return_attention_scores=True`; its weights are the trained
model's. Each function returns an `AttentionMap` that `plots.plot_attention` draws.
"""

from typing import NamedTuple

import numpy as np

from keras_transformer import data, models
from keras_transformer.models.config import TransformerConfig


class AttentionMap(NamedTuple):
    """The arguments of `plots.plot_attention`: weights `(num_heads, q_len, kv_len)`, the
    labels of the rows and columns, and a title."""

    weights: np.ndarray
    query_tokens: list[str]
    key_tokens: list[str]
    title: str


def _tokens(ids, tokenizer) -> list[str]:
    return [t.decode() for t in tokenizer.lookup(np.array([ids])).numpy()[0]]


def cross_attention(
    model, sizes: TransformerConfig, source_tokenizer, target_tokenizer, text: str
) -> AttentionMap:
    """The last decoder layer's cross-attention while `model` translates `text` (greedy).

    Args:
        model: a trained `build_transformer` model.
        sizes: the `TransformerConfig` it was built with.
        source_tokenizer, target_tokenizer: its tokenizers.
        text: one source sentence.

    Returns:
        An `AttentionMap`: one row per generated token, one column per source token.
    """
    probe = models.build_transformer(
        source_tokenizer.vocab_size,
        target_tokenizer.vocab_size,
        config=sizes,
        return_attention_scores=True,
    )
    probe.set_weights(model.get_weights())
    source_ids = np.asarray(data.encode_source([text], source_tokenizer, sizes.max_length))
    source_ids = source_ids[:, : int(np.count_nonzero(source_ids))]
    # Greedy, one probe call a token: the last call's weights are the map. The target is one
    # fixed-width buffer ([START], the tokens so far, then padding the causal mask never lets
    # a row read), so `predict_on_batch` traces the probe once and runs it compiled, not one
    # eager call a token; tests/visualization/test_attention_maps.py checks that both give the
    # same map.
    generated, scores = [], None
    target_ids = np.zeros((1, sizes.max_length - 1), "int32")
    target_ids[0, 0] = target_tokenizer.start_id
    for step in range(sizes.max_length - 1):
        scores = probe.predict_on_batch({"source": source_ids, "target": target_ids})
        logits = np.asarray(scores["logits"][0, step])
        generated.append(int(np.argmax(logits[1:])) + 1)  # never [PAD] (id 0), as the search
        if generated[-1] == target_tokenizer.end_id or step + 1 == target_ids.shape[1]:
            break
        target_ids[0, step + 1] = generated[-1]
    n = len(generated)
    weights = np.asarray(scores[f"decoder_layer_{sizes.num_layers - 1}_cross_attention"][0])[:, :n]
    return AttentionMap(
        weights,
        _tokens(generated, target_tokenizer),
        _tokens(list(source_ids[0]), source_tokenizer),
        f"last decoder layer cross-attention: {text!r}",
    )


def it_attention(
    model,
    tokenizer,
    sentence: str,
    *,
    causal: bool = False,
    config: TransformerConfig | None = None,
    **sizes,
) -> AttentionMap:
    """Every layer's attention *from "it"* (one row per layer, one panel per head).

    Args:
        model: a trained `build_token_classifier` model.
        tokenizer: its tokenizer.
        sentence: one `it-referent` sentence.
        causal: whether `model` is the causal (decoder-only) classifier.
        config, **sizes: the sizes `model` was built with, as in `build_encoder`.

    Returns:
        An `AttentionMap` of weights `(num_heads, num_layers, seq_len)`: the row of "it" in
        every layer (zero after "it" if causal).
    """
    config = TransformerConfig.resolve(config, sizes)
    prefix_name = "decoder" if causal else "encoder"
    probe = models.build_token_classifier(
        model.get_layer(f"{prefix_name}_embedding").vocab_size,
        model.get_layer("logits").units,
        causal=causal,
        config=config,
        return_attention_scores=True,
    )
    probe.set_weights(model.get_weights())
    ids = np.asarray(data.encode_source([sentence], tokenizer, config.max_length))
    position = int(np.argmax(ids[0] == tokenizer.token_to_id("it")))
    scores = probe(ids, training=False)
    layers = range(config.num_layers)
    names = [f"{prefix_name}_layer_{i}_self_attention" for i in layers]
    rows = np.stack([np.asarray(scores[name])[0, :, position] for name in names], axis=1)
    kind = "causal decoder" if causal else "encoder"
    return AttentionMap(
        rows,
        [f"layer {i}: it" for i in layers],
        _tokens(list(ids[0]), tokenizer),
        f"{kind} attention from 'it': {sentence!r}",
    )
