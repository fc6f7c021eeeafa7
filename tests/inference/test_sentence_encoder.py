"""SentenceEncoder: unit vectors, cosine ranking, and a dual encoder that learns to retrieve."""

import numpy as np
import pytest

from keras_transformer import data, models
from keras_transformer.inference import SentenceEncoder, retrieval_accuracy
from keras_transformer.training.dual_encoder import build_dual_encoder, train_dual_encoder


@pytest.fixture(scope="module")
def tokenizer():
    return data.WordPieceTokenizer.learn(["one two three four", "eins zwei drei vier"], 60)


def test_embed_is_unit_length_and_ignores_padding(tokenizer):
    encoder = models.build_encoder(
        tokenizer.vocab_size, num_layers=1, d_model=8, num_heads=2, dff=16, dropout=0.0
    )
    search = SentenceEncoder(encoder, tokenizer, pooling="mean")
    vectors = search.embed(["one two", "three", "one two three four"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    # a sentence embedded alone or beside a longer one (more padding) gives the same vector
    np.testing.assert_allclose(search.embed("three")[0], vectors[1], atol=1e-5)
    ranked = search.rank("one two", ["three", "one two", "four"], top_k=2)
    assert ranked[0] == (1, pytest.approx(1.0, abs=1e-5)) and len(ranked) == 2


def test_errors(tokenizer):
    encoder = models.build_encoder(tokenizer.vocab_size, num_layers=1, d_model=8, num_heads=2)
    with pytest.raises(ValueError, match="pooling"):
        SentenceEncoder(encoder, tokenizer, pooling="max")
    with pytest.raises(ValueError, match="max_length=2"):
        SentenceEncoder(encoder, tokenizer, max_length=2)
    with pytest.raises(ValueError, match="texts is empty"):
        SentenceEncoder(encoder, tokenizer).embed([])
    with pytest.raises(ValueError, match="2 queries and 1 targets"):
        retrieval_accuracy(SentenceEncoder(encoder, tokenizer), ["one", "two"], ["eins"])


def test_dual_encoder_model_saves_with_safe_mode(tmp_path):
    import keras

    model, _ = build_dual_encoder(30, num_layers=1, d_model=8, num_heads=2, dff=16)
    ids = np.array([[2, 7, 3], [2, 8, 3]])
    path = tmp_path / "dual.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(
        loaded({"left": ids, "right": ids}), model({"left": ids, "right": ids}), atol=1e-5
    )


def test_train_dual_encoder_is_the_train_run_and_learns_to_retrieve(tmp_path):
    from keras_transformer.training import TrainConfig
    from keras_transformer.visualization.figures import read_history

    config = TrainConfig(
        architecture="dual-encoder",
        task="numbers",
        num_train=256,
        num_validation=32,
        num_test=40,
        epochs=10,
        batch_size=16,
        num_layers=1,
        d_model=32,
        num_heads=2,
        dff=64,
        vocab_size=300,
        max_length=32,
        learning_rate=2e-3,
        out=str(tmp_path / "dual"),
    )
    search, metrics = train_dual_encoder(config)
    # the front returns the run: its encoder scores what metrics.json says
    task = data.load_task("numbers", **config.task_options())
    sources, targets = [s for s, _ in task.test], [t for _, t in task.test]
    accuracy = retrieval_accuracy(search, sources, targets)
    assert accuracy == pytest.approx(metrics["test_retrieval_accuracy_at_1"])
    assert accuracy >= 8 / 40  # chance is 1/40
    losses = read_history(str(tmp_path / "dual" / "history.csv"))["loss"]
    assert losses[-1] < 0.7 * losses[0]
    assert (tmp_path / "dual" / "config.json").is_file()


def test_train_dual_encoder_refuses_another_architecture():
    from keras_transformer.training import TrainConfig

    with pytest.raises(ValueError, match="architecture='dual-encoder'.*'encoder-decoder'"):
        train_dual_encoder(TrainConfig(task="numbers"))
