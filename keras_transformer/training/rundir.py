"""The run directory every training command writes: creation, `config.json`, JSON files."""

import dataclasses
import json
import os
import shutil
from typing import Any

import keras
import tensorflow as tf

from keras_transformer import plots
from keras_transformer.training.schedule import TransformerSchedule


def check_not_finished(run_dir: str, overwrite: bool) -> None:
    """`FileExistsError` for a finished run (one with `metrics.json`), unless `overwrite`, which
    deletes its training state; an unfinished run is left alone, to be resumed."""
    if not os.path.exists(os.path.join(run_dir, "metrics.json")):
        return
    if not overwrite:
        raise FileExistsError(
            f"{run_dir} already holds a finished run (metrics.json). "
            "Pass --out DIR for a new run, or --overwrite to replace it."
        )
    for name in ("history.csv", "metrics.json"):
        if os.path.exists(path := os.path.join(run_dir, name)):
            os.remove(path)
    for name in ("checkpoints", "backup", "logs", "plots"):
        shutil.rmtree(os.path.join(run_dir, name), ignore_errors=True)


def make_run_dir(run_dir: str) -> str:
    """Creates `run_dir` with `plots/`, `checkpoints/` and `tokenizers/`; returns it.

    Raises:
        ValueError: if the directory cannot be created (a file in the way, no permission).
    """
    try:
        for sub in ("plots", "checkpoints", "tokenizers"):
            os.makedirs(os.path.join(run_dir, sub), exist_ok=True)
    except OSError as error:
        raise ValueError(
            f"cannot create the run directory {run_dir!r} ({error.strerror}); pass another --out."
        ) from None
    return run_dir


def start_run_dir(config: Any, run_dir: str) -> None:
    """Checks `run_dir` is not a finished run, creates it, and seeds Keras with `config.seed`."""
    check_not_finished(run_dir, config.overwrite)
    make_run_dir(run_dir)
    keras.utils.set_random_seed(config.seed)


def write_json(path: str, content: dict) -> None:
    """`content` as indented UTF-8 JSON (accents kept)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(content, handle, indent=2, ensure_ascii=False)


def write_config(config: Any, run_dir: str, **extra: Any) -> None:
    """`config.json`: the fields of the dataclass `config`, its `run_dir`, `extra`, versions."""
    content = {
        **dataclasses.asdict(config), "run_dir": config.run_dir, **extra,
        "keras_version": keras.__version__, "tensorflow_version": tf.__version__,
    }  # fmt: skip
    write_json(os.path.join(run_dir, "config.json"), content)


def plot_run_curves(run_dir: str, config: Any, steps: int, schedule: Any = None) -> None:
    """`plots/history.png` and `plots/learning_rate.png` over the `steps` taken; the rate is
    `schedule` (a `BudgetSchedule` or a constant), else `config.learning_rate`, else the
    paper's `TransformerSchedule` (drawn over at least two warm-ups)."""
    history = plots.read_history(os.path.join(run_dir, "history.csv"))
    plots.plot_history(history, os.path.join(run_dir, "plots", "history.png"))
    path = os.path.join(run_dir, "plots", "learning_rate.png")
    rate = getattr(config, "learning_rate", None)
    if isinstance(schedule, int | float):  # a recipe's constant rate
        rate, schedule = schedule, None
    if schedule is not None:
        title = "warm-up, then cosine decay"
        if steps < schedule.total_steps:
            title += f" (training ended at step {steps})"
        plots.plot_schedule(schedule, max(steps, schedule.total_steps), path, title=title)
    elif rate is None:
        schedule = TransformerSchedule(config.d_model, config.warmup_steps)
        plots.plot_schedule(schedule, max(steps, config.warmup_steps * 2), path)
    else:
        title = f"constant learning rate {rate}"
        plots.plot_schedule(lambda x: [rate] * len(x), max(steps, 1), path, title=title)


def check_splits(task: Any) -> None:
    """`ValueError` naming the split if any of train / validation / test is empty."""
    for split in ("train", "validation", "test"):
        if not task.split(split):
            raise ValueError(
                f"task {task.name!r} has an empty {split} split; every run needs "
                f"training, validation and test examples (raise --num-{split})."
            )
