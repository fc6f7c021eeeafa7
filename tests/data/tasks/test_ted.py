"""The TED pt->en loader, tested offline with tensorflow-datasets' mock data."""

import json
import re
import sys

import pytest
import tensorflow_datasets as tfds

from keras_transformer.cli import main
from keras_transformer.data.tasks.ted import ted_hrlr_pt_en_task
from tests.helpers import TINY_MODEL_ARGS


def test_loads_three_splits_as_str_pairs_offline(tmp_path):
    with tfds.testing.mock_data(num_examples=3, policy=tfds.testing.MockPolicy.USE_CODE):
        task = ted_hrlr_pt_en_task(data_dir=tmp_path)
    assert (task.name, task.source_lang, task.target_lang) == ("ted_hrlr_pt_en", "pt", "en")
    for split in (task.train, task.validation, task.test):
        assert len(split) == 3
        for source, target in split:
            assert isinstance(source, str) and isinstance(target, str)


def test_missing_tensorflow_datasets_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
    with pytest.raises(ImportError, match=re.escape('pip install "keras_transformer[ted]"')):
        ted_hrlr_pt_en_task()


def test_split_sizes_slice_the_tfds_splits(tmp_path):
    with tfds.testing.mock_data(num_examples=6, policy=tfds.testing.MockPolicy.USE_CODE):
        task = ted_hrlr_pt_en_task(data_dir=tmp_path, num_train=4, num_test=2)
    assert (len(task.train), len(task.validation), len(task.test)) == (4, 6, 2)


def test_train_command_runs_on_mock_ted(tmp_path):
    out = tmp_path / "run"
    argv = [
        "train",
        "--task",
        "ted_hrlr_pt_en",
        "--epochs",
        "1",
        "--batch-size",
        "8",
        *TINY_MODEL_ARGS,
        "--max-length",
        "16",
        "--vocab-size",
        "200",
        "--warmup-steps",
        "5",
        "--out",
        str(out),
    ]
    with tfds.testing.mock_data(num_examples=24, policy=tfds.testing.MockPolicy.USE_CODE):
        assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_test"] == 24 and metrics["epochs_run"] == 1
    assert (
        main(["train", "--task", "ted_hrlr_pt_en", "--data", "x.tsv", "--out", str(tmp_path / "b")])
        == 2
    )
