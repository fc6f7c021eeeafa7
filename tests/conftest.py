"""Shared test settings: quiet TensorFlow, deterministic seeds, tiny sizes."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import json  # noqa: E402

import keras  # noqa: E402
import pytest  # noqa: E402

from keras_transformer.data import WordPieceTokenizer  # noqa: E402
from keras_transformer.models import build_transformer  # noqa: E402
from tests.helpers import TINY_MAX_LENGTH, TINY_SOURCES, TINY_TARGETS  # noqa: E402


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("tiny_run")
    source = WordPieceTokenizer.learn(TINY_SOURCES, vocab_size=60)
    target = WordPieceTokenizer.learn(TINY_TARGETS, vocab_size=60)
    source.save(run_dir / "tokenizers" / "source")
    target.save(run_dir / "tokenizers" / "target")
    model = build_transformer(
        source.vocab_size,
        target.vocab_size,
        num_layers=2,
        d_model=16,
        num_heads=2,
        dff=32,
        max_length=TINY_MAX_LENGTH,
    )
    model.save(run_dir / "model.keras")
    (run_dir / "config.json").write_text(json.dumps({"max_length": TINY_MAX_LENGTH}))
    return run_dir
