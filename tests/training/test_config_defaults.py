"""Defaults that depend on the task: set when not given, never over a given value."""

import pytest

from keras_transformer.choices import GENERATED_TASKS
from keras_transformer.training.config import TrainConfig


@pytest.mark.parametrize("task", GENERATED_TASKS)
def test_generated_tasks_train_without_dropout(task):
    assert TrainConfig(task=task).dropout == 0.0


def test_real_text_leaves_dropout_and_sizes_to_the_data():
    config = TrainConfig(task="tsv", data="pairs.tsv")
    assert config.dropout is None  # training.planning.default_dropout, once the sizes are known
    sizes = dict(vocab_size=500, max_length=32, num_layers=1, d_model=32, num_heads=2, dff=64)
    given = TrainConfig(task="tsv", data="pairs.tsv", epochs=2, **sizes)  # every size given
    assert not given.sized_by_data and given.dropout is None
    assert config.planned_schedule and config.sized_by_data
    # train fills these from the corpus (training.planning) and the warm-up with the schedule
    assert config.vocab_size is config.d_model is config.epochs is config.warmup_steps is None
    with_rate = TrainConfig(task="tsv", data="pairs.tsv", learning_rate=1e-3)
    assert not with_rate.planned_schedule and with_rate.warmup_steps == 1000


def test_other_tasks_take_the_fixed_sizes():
    config = TrainConfig(task="reverse")
    assert not config.sized_by_data
    assert (config.vocab_size, config.d_model, config.epochs, config.max_length) == (
        2000,
        128,
        12,
        48,
    )


def test_one_set_of_model_defaults_for_the_builders_and_train():
    import keras_transformer as kt

    # the numbers task trains without dropout and with 48 positions; all else is the default
    assert TrainConfig().model == kt.models.TransformerConfig(max_length=48, dropout=0.0)
    assert TrainConfig(task="it-referent", architecture="encoder").model.dropout == 0.1
    model = kt.models.build_transformer(50, 60)  # no size given: TransformerConfig's
    layers = [layer for layer in model.layers if "encoder_layer" in layer.name]
    # the documented defaults (docs/cli.md, TransformerConfig): 2 layers of 4 heads, d_model 128
    assert (len(layers), layers[0].get_config()["num_heads"]) == (2, 4)
    assert (TrainConfig().num_layers, TrainConfig().num_heads, TrainConfig().d_model) == (2, 4, 128)


def test_a_time_budget_is_parsed_and_caps_nothing_but_time():
    config = TrainConfig(time_budget="1.5m")
    assert config.time_budget == 90.0 and config.planned_schedule
    assert config.epochs == 1000 and config.warmup_steps is None  # the budget ends the run
    assert TrainConfig(task="tsv", data="p.tsv", time_budget=30).epochs == 1000
    with pytest.raises(ValueError, match="time budget 'soon' is not a duration"):
        TrainConfig(time_budget="soon")


def test_generated_tasks_follow_the_planned_schedule_and_others_the_papers():
    assert TrainConfig().planned_schedule and TrainConfig().warmup_steps is None
    assert TrainConfig(task="reverse").planned_schedule
    paper = TrainConfig(task="it-referent", architecture="encoder")
    assert not paper.planned_schedule and paper.warmup_steps == 1000


def test_given_values_win():
    config = TrainConfig(dropout=0.3, warmup_steps=50)
    assert (config.dropout, config.warmup_steps) == (0.3, 50)
    assert TrainConfig(dropout=0.0, task="tsv", data="p.tsv").dropout == 0.0


def test_a_config_is_fixed_where_it_is_made():
    import dataclasses

    from keras_transformer.training.pretrain_config import PretrainConfig

    for config in (TrainConfig(task="numbers", out="somewhere"), PretrainConfig(corpus="reviews")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            config.epochs = 99
        assert config.run_dir == ("somewhere" if config.out else "runs/mlm_reviews")
        assert config.settings["epochs"] == config.epochs  # recorded after the unset were filled
    assert (
        dataclasses.asdict(TrainConfig(task="tsv", data="x.tsv"))
        == TrainConfig(task="tsv", data="x.tsv").settings
    )
    assert PretrainConfig().finetune_task == "reviews"  # 'auto', resolved while made
