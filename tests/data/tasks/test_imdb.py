"""IMDB loader and encoder run, offline: keras.datasets.imdb is replaced by a tiny fake."""

import json

import keras
import numpy as np
import pytest

from keras_transformer.data import load_task
from keras_transformer.training.config import TrainConfig
from keras_transformer.training.run import train

WORDS = {"good": 1, "bad": 2, "film": 3, "great": 4, "awful": 5, "plot": 6}


def _review(rng, positive):
    word = ("good", "great") if positive else ("bad", "awful")
    ids = [1] + [WORDS[rng.choice(word)] + 3, WORDS["film"] + 3, WORDS["plot"] + 3, 2]
    return ids  # 1 = start, 2 = out-of-vocabulary, words from index 4


@pytest.fixture
def fake_imdb(monkeypatch):
    rng = np.random.default_rng(0)

    def split(n):
        labels = rng.integers(0, 2, size=n)
        reviews = np.empty(n, dtype=object)
        for i, label in enumerate(labels):
            reviews[i] = _review(rng, bool(label))
        return reviews, labels

    data = (split(240), split(60))
    monkeypatch.setattr(keras.datasets.imdb, "load_data", lambda **kwargs: data)
    monkeypatch.setattr(keras.datasets.imdb, "get_word_index", lambda **kwargs: dict(WORDS))


def test_imdb_pairs_are_decoded_text(fake_imdb):
    task = load_task("imdb", num_validation=40, num_test=30, max_words=3)
    assert (len(task.train), len(task.validation), len(task.test)) == (200, 40, 30)
    review, label = task.train[0]
    assert label in ("positive", "negative") and len(review.split()) == 3
    assert review.split()[1:] == ["film", "plot"]
    expected = "positive" if review.split()[0] in ("good", "great") else "negative"
    assert label == expected
    assert all("<unk>" == r.split()[-1] for r, _ in load_task("imdb", num_validation=1).test)


def test_imdb_encoder_run(fake_imdb, tmp_path):
    config = TrainConfig(
        task="imdb",
        architecture="encoder",
        num_validation=40,
        epochs=3,
        num_layers=1,
        d_model=16,
        num_heads=2,
        dff=32,
        batch_size=16,
        warmup_steps=20,
        vocab_size=60,
        max_length=16,
        out=str(tmp_path / "imdb"),
    )
    metrics = train(config)
    assert metrics["test_accuracy"] >= 0.9  # the sentiment word decides the label
    assert json.loads((tmp_path / "imdb" / "metrics.json").read_text())["num_test"] == 60
    assert (tmp_path / "imdb" / "model.keras").is_file()
    with pytest.raises(ValueError, match="sequence-classification task"):
        TrainConfig(task="imdb", architecture="decoder-only")


def test_failed_download_is_one_clear_error(monkeypatch, tmp_path, capsys):
    from keras_transformer.cli import main

    def offline(**kwargs):
        raise Exception("URL fetch failure on https://storage.googleapis.com/imdb.npz: None")

    monkeypatch.setattr(keras.datasets.imdb, "load_data", offline)
    with pytest.raises(OSError, match="could not load the IMDB reviews .* ~/.keras/datasets"):
        load_task("imdb")
    out = tmp_path / "imdb"
    assert main(["train", "--task", "imdb", "--architecture", "encoder", "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("keras-transformer train: error: could not load the IMDB reviews")
    assert "\n" not in error and not out.exists()  # nothing written before the data was read
