"""The run directory every training command writes: creation, `config.json`, JSON files."""

import dataclasses
import json
import logging
import os
import shutil
from typing import Any

import keras
import tensorflow as tf

from keras_transformer.inference.decoding import DECODING_FILE
from keras_transformer.training.schedule import TransformerSchedule
from keras_transformer.visualization import figures as plots

logger = logging.getLogger(__name__)
progress_logger = logging.getLogger("keras_transformer.progress")
"""Lines a run shows by default (INFO, even without `-v`): per-epoch progress of a budget run,
that a run resumed, why training stopped early."""
progress_logger.setLevel(logging.INFO)

STATE = "state.json"
"""An unfinished run's own file: the settings it was started with and the training so far
(`epochs_run`, `train_seconds` over every process, `fit_finished`); removed when it finishes."""

RUN_FILES = ("config.json", "history.csv", "metrics.json", "model.keras", STATE, DECODING_FILE)
RUN_FOLDERS = ("backup", "checkpoints", "logs", "plots", "tokenizers")
"""What a run directory holds: `--overwrite` deletes these names, and nothing else."""

IGNORED_SETTINGS = ("overwrite", "out")
"""Settings that may change when an unfinished run is resumed (`out` names the directory)."""

PATH_SETTINGS = ("data", "validation_data", "test_data", "init_from", "corpus")
"""Settings that name files: compared as resolved paths (`./data/x.txt` is `data/x.txt`)."""


def check_run_dir(config: Any, run_dir: str) -> None:
    """Checks that `config` may write `run_dir`, before any data work or file is written.

    Refused: a path that is a file; a finished run (with `metrics.json`) unless `--overwrite`;
    an unfinished run started with other settings unless `--overwrite`.

    Raises:
        FileExistsError: naming the path, or the settings that differ (old -> new), and the
            ways on.
    """
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise FileExistsError(f"--out {run_dir} is a file, not a directory; pass another --out.")
    if config.overwrite:
        return
    if os.path.exists(os.path.join(run_dir, "metrics.json")):
        raise FileExistsError(
            f"{run_dir} already holds a finished run (metrics.json). "
            "Pass --out DIR for a new run, or --overwrite to replace it."
        )
    if changed := changed_settings(config, run_dir):
        differences = ", ".join(
            f"{_flag(name)} {_shown(old)} -> {_shown(new)}" for name, (old, new) in changed.items()
        )
        raise FileExistsError(
            f"{run_dir} holds an unfinished run started with other settings ({differences}); "
            "resume it with its old settings, or pass --overwrite to start it again."
        )


def is_unfinished(run_dir: str) -> bool:
    """Whether `run_dir` holds a run that was started and not finished (no `metrics.json`)."""
    started = any(os.path.isfile(os.path.join(run_dir, name)) for name in (STATE, "config.json"))
    return started and not os.path.isfile(os.path.join(run_dir, "metrics.json"))


def overwrites(config: Any, run_dir: str) -> bool:
    """Whether `config` (with `--overwrite`) clears `run_dir`: a finished run, or an unfinished
    one started with other settings. An unfinished run with the same settings is resumed: the
    command that resumes an interrupted `--overwrite` run is then the same command, and a
    repeated `--overwrite` never throws away the training done. (Delete the directory to start
    such a run again.)"""
    if not getattr(config, "overwrite", False):
        return False
    return not (is_unfinished(run_dir) and not changed_settings(config, run_dir))


def changed_settings(config: Any, run_dir: str) -> dict[str, tuple[Any, Any]]:
    """`{name: (old, new)}`: the settings of `config` that differ from those the unfinished run
    in `run_dir` was started with (`state.json`, else the non-planned values of `config.json`)."""
    new = requested_settings(config)
    state = read_state(run_dir)
    if "settings" in state:
        old, planned = state["settings"], False
    else:  # a run from before state.json: its config.json holds planned sizes too
        old, planned = _read_json(os.path.join(run_dir, "config.json")), True
    changed = {}
    for name, value in new.items():
        if name not in old or (planned and value is None):
            continue
        if not _same_setting(name, old[name], value):
            changed[name] = (old[name], value)
    return changed


def _same_setting(name: str, old: Any, new: Any) -> bool:
    if name in PATH_SETTINGS and isinstance(old, str) and isinstance(new, str):
        return os.path.realpath(old) == os.path.realpath(new)
    return old == new


def requested_settings(config: Any) -> dict[str, Any]:
    """The settings a run was asked for (before sizes are planned from the data), as JSON; the
    paths of `PATH_SETTINGS` resolved (a resume from another directory names the same files)."""
    settings = {k: v for k, v in dataclasses.asdict(config).items() if k not in IGNORED_SETTINGS}
    for name in PATH_SETTINGS:
        if isinstance(settings.get(name), str) and os.path.exists(settings[name]):
            settings[name] = os.path.realpath(settings[name])
    return json.loads(json.dumps(settings))


def clear_run(run_dir: str) -> None:
    """Deletes the files and folders of a run (`RUN_FILES`, `RUN_FOLDERS`), finished or not:
    `--overwrite`. Other files in `run_dir` are left alone."""
    for name in RUN_FILES:
        if os.path.isfile(path := os.path.join(run_dir, name)):
            os.remove(path)
    for name in RUN_FOLDERS:
        shutil.rmtree(os.path.join(run_dir, name), ignore_errors=True)


def read_state(run_dir: str) -> dict[str, Any]:
    """The content of `state.json` (`{}` when absent or unreadable)."""
    return _read_json(os.path.join(run_dir, STATE))


def update_state(run_dir: str, **values: Any) -> None:
    """Sets `values` in `state.json` (created if missing), atomically."""
    state = {**read_state(run_dir), **values}
    partial = os.path.join(run_dir, f".partial-{STATE}")
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(state, handle, indent=2, ensure_ascii=False)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, os.path.join(run_dir, STATE))


def finish_run(run_dir: str) -> None:
    """After `metrics.json`: the run is finished; its `state.json` and backup go."""
    if os.path.isfile(path := os.path.join(run_dir, STATE)):
        os.remove(path)
    shutil.rmtree(os.path.join(run_dir, "backup"), ignore_errors=True)


def _read_json(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            content = json.load(handle)
    except (OSError, ValueError):
        return {}
    return content if isinstance(content, dict) else {}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _shown(value: Any) -> str:
    return "(default)" if value is None else str(value)


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
    """Checks `run_dir` (`check_run_dir`; `--overwrite` clears it), creates it with the
    requested settings in `state.json`, and seeds Keras with `config.seed`."""
    check_run_dir(config, run_dir)
    if overwrites(config, run_dir):
        clear_run(run_dir)
    make_run_dir(run_dir)
    update_state(run_dir, settings=requested_settings(config))
    keras.utils.set_random_seed(config.seed)


def write_json(path: str, content: dict) -> None:
    """`content` as indented UTF-8 JSON (accents kept)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(content, handle, indent=2, ensure_ascii=False)


def write_config(config: Any, run_dir: str, **extra: Any) -> None:
    """`config.json`: the fields of the dataclass `config`, its `run_dir`, `extra`, versions."""
    content = {
        **dataclasses.asdict(config),
        "run_dir": config.run_dir,
        **extra,
        "keras_version": keras.__version__,
        "tensorflow_version": tf.__version__,
    }
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
