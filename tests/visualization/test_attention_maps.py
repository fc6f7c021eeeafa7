"""`attention_maps.cross_attention`: its one compiled probe call a step gives the map and the
greedy tokens of the plain, growing-target loop (one eager call per token)."""

import keras
import numpy as np
import pytest

from keras_transformer import data, models
from keras_transformer.data.text.tokenizer import WordPieceTokenizer
from keras_transformer.models.config import TransformerConfig
from keras_transformer.visualization import attention_maps


def _growing_loop(model, sizes, source_tok, target_tok, text):
    """The reference: the target grows one token a call, the last call's weights are the map."""
    probe = models.build_transformer(
        source_tok.vocab_size, target_tok.vocab_size, config=sizes, return_attention_scores=True
    )
    probe.set_weights(model.get_weights())
    source = np.asarray(data.encode_source([text], source_tok, sizes.max_length))
    source = source[:, : int(np.count_nonzero(source))]
    generated, scores = [], None
    for _ in range(sizes.max_length - 1):
        target = np.array([[target_tok.start_id, *generated]], "int32")
        scores = probe({"source": source, "target": target}, training=False)
        generated.append(int(np.argmax(np.asarray(scores["logits"][0, -1])[1:])) + 1)
        if generated[-1] == target_tok.end_id:
            break
    last = f"decoder_layer_{sizes.num_layers - 1}_cross_attention"
    return np.asarray(scores[last][0]), generated


@pytest.mark.parametrize("seed, max_length", [(3, 10)])
def test_cross_attention_matches_the_growing_target_loop(seed, max_length):
    task = data.load_task("numbers", num_train=60, seed=seed)
    source_tok = WordPieceTokenizer.learn([s for s, _ in task.train], vocab_size=80)
    target_tok = WordPieceTokenizer.learn([t for _, t in task.train], vocab_size=80)
    sizes = TransformerConfig(
        num_layers=2, d_model=16, num_heads=2, dff=32, max_length=max_length, dropout=0.0
    )
    keras.utils.set_random_seed(seed)
    model = models.build_transformer(source_tok.vocab_size, target_tok.vocab_size, config=sizes)
    text = task.test[0][0]
    found = attention_maps.cross_attention(model, sizes, source_tok, target_tok, text)
    weights, generated = _growing_loop(model, sizes, source_tok, target_tok, text)
    assert found.weights.shape == weights.shape == (2, len(generated), weights.shape[-1])
    np.testing.assert_allclose(found.weights, weights, atol=1e-5)
    assert len(found.query_tokens) == len(generated)
