"""`training.plan`: one frozen plan per run, its `max_length` from training and validation."""

import dataclasses

import pytest

from keras_transformer.data.tasks.task import Task
from keras_transformer.training import plan as plan_module
from keras_transformer.training import recipes
from keras_transformer.training.config import TrainConfig
from keras_transformer.training.schedule import BudgetSchedule


class Unread(list):
    """A split that fails the test when it is read."""

    def __iter__(self):
        raise AssertionError("the test split was read while the run was sized")

    def __getitem__(self, index):
        raise AssertionError("the test split was read while the run was sized")


def _pairs(count: int, words: int, offset: int = 0) -> list[tuple[str, str]]:
    return [
        (
            " ".join(f"w{(i + j) % 50}" for j in range(words)),
            " ".join(f"v{(i + j + offset) % 50}" for j in range(words)),
        )
        for i in range(count)
    ]


def _task(test) -> Task:
    return Task("tsv", "en", "xx", train=_pairs(400, 6), validation=_pairs(40, 6, 1), test=test)


CONFIG = dict(task="tsv", data="pairs.tsv", epochs=2, batch_size=32, jit_compile="off")


def test_sizes_never_read_the_test_split():
    config = TrainConfig(**CONFIG)
    task = _task(Unread(_pairs(10, 300)))
    sizes, _ = plan_module.resolve_sizes(config, task, None, "translation")
    tokenizers = recipes.RECIPES["translation"].vocabularies(config, task, None, 500)
    chosen, _ = plan_module.fit_length(sizes, task, tokenizers)
    assert chosen["max_length"] == 16  # six words a side, framed: the smallest length


def test_long_test_sentences_do_not_change_the_plan():
    config = TrainConfig(**CONFIG)
    short = recipes.prepare_recipe(config, _task(_pairs(20, 6, 2))).plan
    long = recipes.prepare_recipe(config, _task(_pairs(20, 300, 2))).plan
    names = ("max_length", "vocab_size", "num_layers", "d_model", "dropout", "steps_per_epoch")
    assert [getattr(short, n) for n in names] == [getattr(long, n) for n in names]
    assert short.max_length == 16


def test_the_plan_is_frozen_and_the_settings_left_alone():
    config = TrainConfig(**CONFIG)
    before = dataclasses.asdict(config)
    plan = recipes.prepare_recipe(config, _task(_pairs(20, 6, 2))).plan
    assert dataclasses.asdict(config) == before  # nothing written behind the caller
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.max_length = 8
    assert isinstance(plan.learning_rate, BudgetSchedule)  # tsv: a planned schedule
    assert plan.model.max_length == plan.max_length and plan.model.d_model == plan.d_model
    assert plan.recorded["max_length"] == plan.max_length  # what config.json records


def test_an_epoch_is_planned_at_the_plans_one_pace():
    sizes = dict(num_layers=2, d_model=64, dff=256, vocab_size=3500)
    pace = plan_module.planning.pace(**sizes)
    assert plan_module._epoch_seconds(100, 1500.0, sizes) == pytest.approx(100 * 1500.0 / pace)
    # Twice the tokens a batch: twice the seconds; sizes left unset: no estimate.
    assert plan_module._epoch_seconds(100, 3000.0, sizes) == pytest.approx(200 * 1500.0 / pace)
    assert plan_module._epoch_seconds(100, 1500.0, {**sizes, "vocab_size": None}) is None
