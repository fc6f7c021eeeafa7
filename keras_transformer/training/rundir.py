"""The run directory every training command writes: creation, `config.json`, JSON files."""

from __future__ import annotations

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
    """Refuses to train into a finished run, or clears it for `overwrite`.

    A finished run (one with `metrics.json`) raises `FileExistsError` unless
    `overwrite`; with `overwrite`, its training state (`history.csv`,
    `metrics.json`, `checkpoints/`, `backup/`, `logs/`, `plots/`) is deleted so
    the new run neither resumes from it nor competes with its best loss. An
    unfinished run is left alone: running the same command again resumes it.
    """
    if not os.path.exists(os.path.join(run_dir, "metrics.json")):
        return
    if not overwrite:
        raise FileExistsError(
            f"{run_dir} already holds a finished run (metrics.json). "
            "Pass --out DIR for a new run, or --overwrite to replace it."
        )
    for name in ("history.csv", "metrics.json"):
        path = os.path.join(run_dir, name)
        if os.path.exists(path):
            os.remove(path)
    for name in ("checkpoints", "backup", "logs", "plots"):
        shutil.rmtree(os.path.join(run_dir, name), ignore_errors=True)


def make_run_dir(run_dir: str) -> str:
    """Creates `run_dir` with `plots/`, `checkpoints/` and `tokenizers/`; returns it.

    Raises:
        ValueError: if the directory cannot be created (a file in the way, no
            permission), naming the path.
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
    """`config.json` in `run_dir`: every field of the dataclass `config` (and its
    `run_dir`), `extra`, and the library versions."""
    write_json(
        os.path.join(run_dir, "config.json"),
        {
            **dataclasses.asdict(config),
            "run_dir": config.run_dir,
            **extra,
            "keras_version": keras.__version__,
            "tensorflow_version": tf.__version__,
        },
    )


def plot_run_curves(run_dir: str, config: Any, steps: int, schedule: Any = None) -> None:
    """`plots/history.png` (from `history.csv`) and `plots/learning_rate.png`.

    The learning rate is `schedule` when given (the run's `BudgetSchedule`, or
    a recipe's constant rate),
    `config.learning_rate` when the config has one that is set (a constant), else the paper's `TransformerSchedule(config.d_model,
    config.warmup_steps)`, drawn over the `steps` taken (at least two warm-ups).
    """
    plots_dir = os.path.join(run_dir, "plots")
    plots.plot_history(
        plots.read_history(os.path.join(run_dir, "history.csv")),
        os.path.join(plots_dir, "history.png"),
    )
    path = os.path.join(plots_dir, "learning_rate.png")
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
        plots.plot_schedule(
            lambda x: [rate] * len(x), max(steps, 1), path, title=f"constant learning rate {rate}"
        )


def check_splits(task: Any) -> None:
    """`ValueError` naming the split if any of train / validation / test is empty."""
    for split in ("train", "validation", "test"):
        if not task.split(split):
            raise ValueError(
                f"task {task.name!r} has an empty {split} split; every run needs "
                f"training, validation and test examples (raise --num-{split})."
            )
