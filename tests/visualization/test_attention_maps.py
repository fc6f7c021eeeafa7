"""`attention_maps.cross_attention` against plain eager greedy decoding of the same probe."""

import numpy as np
import pytest

from keras_transformer import data, models
from keras_transformer.models.config import TransformerConfig
from keras_transformer.visualization import attention_maps

SOURCES = ["one two three", "four five six", "seven eight nine ten", "two four six eight"]
TARGETS = ["eins zwei drei", "vier fuenf sechs", "sieben acht neun zehn", "zwei vier sechs acht"]


def _eager_greedy(model, sizes, source_tokenizer, target_tokenizer, text):
    """The reference: one eager probe call per token on the growing prefix."""
    probe = models.build_transformer(
        source_tokenizer.vocab_size,
        target_tokenizer.vocab_size,
        config=sizes,
        return_attention_scores=True,
    )
    probe.set_weights(model.get_weights())
    source = np.asarray(data.encode_source([text], source_tokenizer, sizes.max_length))
    source = source[:, : int(np.count_nonzero(source))]
    generated, scores = [], None
    for _ in range(sizes.max_length - 1):
        target = np.array([[target_tokenizer.start_id, *generated]], "int32")
        scores = probe({"source": source, "target": target}, training=False)
        generated.append(int(np.argmax(np.asarray(scores["logits"][0, -1])[1:])) + 1)
        if generated[-1] == target_tokenizer.end_id:
            break
    name = f"decoder_layer_{sizes.num_layers - 1}_cross_attention"
    return generated, np.asarray(scores[name][0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cross_attention_is_eager_greedy_decoding(seed):
    import keras

    source = data.WordPieceTokenizer.learn(SOURCES, vocab_size=40)
    target = data.WordPieceTokenizer.learn(TARGETS, vocab_size=40)
    sizes = TransformerConfig(num_layers=2, d_model=16, num_heads=2, dff=32, max_length=10)
    keras.utils.set_random_seed(seed)  # untrained: some seeds stop early, some run to the end
    model = models.build_transformer(source.vocab_size, target.vocab_size, config=sizes)
    found = attention_maps.cross_attention(model, sizes, source, target, SOURCES[2])
    generated, weights = _eager_greedy(model, sizes, source, target, SOURCES[2])
    assert found.weights.shape == weights.shape == (2, len(generated), weights.shape[2])
    np.testing.assert_allclose(found.weights, weights, atol=1e-6)
    expected = [t.decode() for t in target.lookup(np.array([generated])).numpy()[0]]
    assert found.query_tokens == expected
    assert len(found.key_tokens) == weights.shape[2]
