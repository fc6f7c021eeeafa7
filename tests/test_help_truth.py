"""Every `--help` line says what the command does: each shown default is the value the command
uses, and the behaviours the help describes (`--overwrite`, `--dropout`, `--warmup-steps`, ...)
are those of the code. No TensorFlow work: the rules are called directly."""

import argparse
import re

import pytest

from keras_transformer import cli
from keras_transformer.commands._arguments import help_text


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return {"": parser, **sub.choices}


def _options(name: str) -> dict[str, argparse.Action]:
    return {a.dest: a for a in _commands()[name]._actions if a.option_strings}


def _shown_default(action: argparse.Action) -> str | None:
    text = " ".join(help_text(action).replace("%%", "%").split())  # as argparse prints it
    found = re.search(r"\(default: (.*)\)$", text)
    return found.group(1) if found else None


@pytest.mark.parametrize("name", [n for n in cli.COMMANDS if n not in ("train", "pretrain")])
def test_a_plain_default_shown_is_the_argparse_default(name):
    """Commands whose options have argparse defaults: "(default: X)" is that default, unless the
    help explains it in words (a default of None)."""
    for action in _options(name).values():
        shown = _shown_default(action)
        if shown is None or action.default in (None, argparse.SUPPRESS):
            continue
        if getattr(action, "default_text", None) is not None or "default" in action.help:
            continue  # a default explained in words
        value = action.default
        expected = " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        assert shown == expected, (name, action.option_strings, shown, expected)


def test_train_defaults_shown_are_the_values_a_run_resolves():
    """Each simple "(default: X)" of `train` is `TrainConfig()`'s resolved value."""
    from keras_transformer.training.config import TrainConfig

    resolved = TrainConfig()  # --task numbers, the default job
    checked = 0
    for dest, action in _options("train").items():
        shown = _shown_default(action)
        if shown is None or dest not in vars(resolved) or not re.fullmatch(r"[\w.,-]+", shown):
            continue
        if "default" in action.help:  # written by hand (--columns: the task's 1,2)
            continue
        value = getattr(resolved, dest)
        assert shown == ("none" if value is None else str(value)), (dest, shown, value)
        checked += 1
    assert checked >= 8  # batch_size, label_smoothing, seed, jit_compile, strategy, ...
    # sizes: the first value shown is the fixed one, and a budget's epoch cap is the config's
    for dest in ("epochs", "max_length", "num_layers", "d_model", "num_heads", "dff"):
        first = re.search(r"(\d+);", _shown_default(_options("train")[dest])).group(1)
        assert int(first) == getattr(resolved, dest), dest
    budgeted = TrainConfig(time_budget="1m")
    assert f"up to {budgeted.epochs}" in _shown_default(_options("train")["epochs"])
    assert budgeted.early_stopping_patience is None  # "without --time-budget, early stopping"
    assert resolved.early_stopping_patience == 4
    assert "after 4 epochs" in help_text(_options("train")["epochs"])


def test_train_dropout_help_is_the_rule_that_chooses_it():
    from keras_transformer.choices import GENERATED_TASKS
    from keras_transformer.training import planning
    from keras_transformer.training.config import DEFAULT_DROPOUT, TrainConfig

    text = _shown_default(_options("train")["dropout"])
    assert all(TrainConfig(task=task).dropout == 0.0 for task in GENERATED_TASKS)
    assert "0 on the generated tasks" in text
    tiny = dict(num_layers=2, d_model=64, num_heads=4, dff=256)
    few, many = planning.FEW_PASSES, planning.FEW_PASSES + 4
    assert planning.default_dropout("tsv", tiny, passes=few) == 0.0  # "0 for the 2 x 64 model"
    assert planning.default_dropout("tsv", tiny, passes=many) == DEFAULT_DROPOUT  # "else 0.1"
    assert f"0 for the 2 x 64 model if the run plans at most {few:g} passes" in text
    assert text.endswith(f"else {DEFAULT_DROPOUT} (-v prints the one chosen)")
    assert TrainConfig(task="imdb", architecture="encoder").dropout == DEFAULT_DROPOUT


def test_train_warmup_and_learning_rate_help_are_the_schedules_used():
    from keras_transformer.training.config import TrainConfig
    from keras_transformer.training.planning import choose_warmup

    warmup = _shown_default(_options("train")["warmup_steps"])
    assert "8% of the planned updates, within [10, 4000]" in warmup and warmup.endswith("1000")
    assert (choose_warmup(1000), choose_warmup(10**6), choose_warmup(1)) == (80, 4000, 10)
    assert TrainConfig(task="imdb", architecture="encoder").warmup_steps == 1000
    assert TrainConfig(task="numbers").warmup_steps is None  # planned
    rate = help_text(_options("train")["learning_rate"])
    assert TrainConfig(task="numbers").planned_schedule  # "the generated tasks"
    assert TrainConfig(task="imdb", architecture="encoder", time_budget="5m").planned_schedule
    assert not TrainConfig(task="imdb", architecture="encoder").planned_schedule  # the paper's
    assert "the paper's warm-up then 1/sqrt(step) decay" in " ".join(rate.split())


def test_overwrite_help_is_what_a_run_directory_does_with_it(tmp_path):
    """An unfinished run with the same settings is resumed even with --overwrite; a finished
    one, or one with other settings, is replaced: its files deleted, other files kept."""
    from keras_transformer.runs import RunDirectory
    from keras_transformer.training.config import TrainConfig

    for name in ("train", "pretrain"):
        text = " ".join(help_text(_options(name)["overwrite"]).split())
        assert "finished or not" not in text
        assert "An unfinished run with the same settings is resumed, not restarted" in text
        assert "other files in the directory are kept" in text
    config = TrainConfig(out=str(tmp_path / "run"), overwrite=True)
    run = RunDirectory(config.run_dir)
    run.make()
    run.update_state(settings=__import__("keras_transformer.runs").runs.requested_settings(config))
    assert not run.overwrites(config)  # unfinished, same settings: resumed
    other = TrainConfig(out=config.out, overwrite=True, seed=3)
    assert run.overwrites(other)  # other settings: replaced
    (tmp_path / "run" / "mine.txt").write_text("kept")
    (tmp_path / "run" / "metrics.json").write_text("{}")
    assert run.overwrites(config)  # finished: replaced
    run.clear()
    assert (tmp_path / "run" / "mine.txt").exists()
    assert not (tmp_path / "run" / "metrics.json").exists()


def test_help_names_no_file_the_installed_package_lacks():
    """A pointer in the help leads somewhere from a wheel: no `docs/...` path of the clone."""
    for name, parser in _commands().items():
        text = parser.format_help()
        assert not re.search(r"(?<![/\w])docs/\w", text), (name, text)
