"""Defaults that depend on the task: set when not given, never over a given value."""

import pytest

from keras_transformer.training.config import GENERATED_TASKS, TrainConfig


@pytest.mark.parametrize("task", GENERATED_TASKS)
def test_generated_tasks_train_without_dropout(task):
    assert TrainConfig(task=task).dropout == 0.0


def test_real_text_keeps_dropout_and_the_usual_warm_up():
    config = TrainConfig(task="tsv", data="pairs.tsv")
    assert (config.dropout, config.warmup_steps) == (0.1, 1000)


def test_numbers_warms_up_longer():
    assert TrainConfig().warmup_steps == 2000
    assert TrainConfig(task="reverse").warmup_steps == 1000


def test_given_values_win():
    config = TrainConfig(dropout=0.3, warmup_steps=50)
    assert (config.dropout, config.warmup_steps) == (0.3, 50)
    assert TrainConfig(dropout=0.0, task="tsv", data="p.tsv").dropout == 0.0
