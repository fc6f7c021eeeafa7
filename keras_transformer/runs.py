"""A run directory: `RunDirectory`, the one type that writes a run's files and `state.json` and
reads them back (which files a translation run has, whether they are damaged, whether the run
finished, whether a new run may write there).

Pure Python (no TensorFlow): `keras-transformer translate` and the attention page read runs too.
"""

import json
import os
import shutil
import zipfile
from typing import Any

from keras_transformer.choices import TRANSLATING_ARCHITECTURES
from keras_transformer.errors import DamagedRunError, UserInputError

STATE = "state.json"
"""An unfinished run's own file: the settings it was started with and the training so far
(`epochs_run`, `train_seconds` over every process, `fit_finished`); removed when it finishes."""

DECODING_FILE = "decoding.json"
"""The search `translate` uses when given none: chosen on the validation split after training
(`inference.decoding`)."""

RUN_FILES = ("config.json", "history.csv", "metrics.json", "model.keras", STATE, DECODING_FILE)
RUN_FOLDERS = ("backup", "checkpoints", "fine_tuning", "logs", "plots", "tokenizers")
"""What a run directory holds: `--overwrite` deletes these names, and nothing else."""

IGNORED_SETTINGS = ("overwrite", "out")
"""Settings that may change when an unfinished run is resumed (`out` names the directory)."""

PATH_SETTINGS = ("data", "validation_data", "test_data", "init_from", "corpus")
"""Settings that name files: compared as resolved paths (`./data/x.txt` is `data/x.txt`)."""


def requested_settings(config: Any) -> dict[str, Any]:
    """The settings a run was asked for (before sizes are planned from the data), as JSON; the
    paths of `PATH_SETTINGS` resolved (a resume from another directory names the same files)."""
    settings = {k: v for k, v in config.settings.items() if k not in IGNORED_SETTINGS}
    for name in PATH_SETTINGS:
        if isinstance(settings.get(name), str) and os.path.exists(settings[name]):
            settings[name] = os.path.realpath(settings[name])
    return json.loads(json.dumps(settings))


class RunDirectory:
    """The run directory at `path`: its files and its state, written and read here only.

    A run is *unfinished* while it has `state.json` (or `config.json`) and no `metrics.json`,
    which is written last. Writing: `check_writable` (before any data work), `overwrites` /
    `clear`, `make`, `update_state`, `write_json`, `write_config`, `finish`. Reading: `state`,
    `read_json`, `check_files`, `check_finished`, `translation_files`.

    Example:
    >>> import tempfile
    >>> run = RunDirectory(tempfile.mkdtemp())
    >>> run.update_state(epochs_run=1)
    >>> run.state(), run.is_unfinished()
    ({'epochs_run': 1}, True)
    """

    def __init__(self, path: str):
        self.path = path

    def __repr__(self) -> str:
        return f"RunDirectory({self.path!r})"

    def file(self, *names: str) -> str:
        """The path of `names` inside the run directory."""
        return os.path.join(self.path, *names)

    # --- state -------------------------------------------------------------------------------

    def read_json(self, name: str) -> dict[str, Any]:
        """The JSON object in file `name` (`{}` when absent, unreadable or not an object)."""
        try:
            with open(self.file(name), encoding="utf-8") as handle:
                content = json.load(handle)
        except (OSError, ValueError):
            return {}
        return content if isinstance(content, dict) else {}

    def state(self) -> dict[str, Any]:
        """The content of `state.json` (`{}` when absent or unreadable)."""
        return self.read_json(STATE)

    def update_state(self, **values: Any) -> None:
        """Sets `values` in `state.json` (created if missing), atomically."""
        self.write_json(STATE, {**self.state(), **values})

    def is_unfinished(self) -> bool:
        """Whether it holds a run that was started and not finished (no `metrics.json`)."""
        started = any(os.path.isfile(self.file(name)) for name in (STATE, "config.json"))
        return started and not os.path.isfile(self.file("metrics.json"))

    # --- before a run writes -----------------------------------------------------------------

    def check_writable(self, config: Any) -> None:
        """Checks that `config` may write here, before any data work or file is written.

        Refused: a path that is a file; a finished run (with `metrics.json`) unless
        `--overwrite`; an unfinished run started with other settings unless `--overwrite`.

        Raises:
            FileExistsError: naming the path, or the settings that differ (old -> new), and
                the ways on.
        """
        run_dir = self.path
        if os.path.exists(run_dir) and not os.path.isdir(run_dir):
            raise FileExistsError(
                f"--out {run_dir} is a file, not a directory; pass another --out."
            )
        if config.overwrite:
            return
        if os.path.exists(self.file("metrics.json")):
            raise FileExistsError(
                f"{run_dir} already holds a finished run (metrics.json). "
                "Pass --out DIR for a new run, or --overwrite to replace it."
            )
        if changed := self.changed_settings(config):
            differences = ", ".join(
                f"{_flag(name)} {_shown(old)} -> {_shown(new)}"
                for name, (old, new) in changed.items()
            )
            raise FileExistsError(
                f"{run_dir} holds an unfinished run started with other settings ({differences}); "
                "resume it with its old settings, or pass --overwrite to start it again."
            )

    def finished_metrics(self, config: Any) -> dict[str, Any] | None:
        """The `metrics.json` of a finished run started with the settings of `config`, else
        None: a run of several parts (`pretrain`'s fine-tuning) skips what it has done."""
        if not os.path.isfile(self.file("metrics.json")) or self.changed_settings(config):
            return None
        return self.read_json("metrics.json")

    def overwrites(self, config: Any) -> bool:
        """Whether `config` (with `--overwrite`) clears it: a finished run, or an unfinished one
        started with other settings. An unfinished run with the same settings is resumed: the
        command that resumes an interrupted `--overwrite` run is then the same command, and a
        repeated `--overwrite` never throws away the training done. (Delete the directory to
        start such a run again.)"""
        if not getattr(config, "overwrite", False):
            return False
        return not (self.is_unfinished() and not self.changed_settings(config))

    def changed_settings(self, config: Any) -> dict[str, tuple[Any, Any]]:
        """`{name: (old, new)}`: the settings of `config` that differ from those the unfinished
        run was started with (`state.json`, else the non-planned values of `config.json`)."""
        new = requested_settings(config)
        state = self.state()
        if "settings" in state:
            old, planned = state["settings"], False
        else:  # a run from before state.json: its config.json holds planned sizes too
            old, planned = self.read_json("config.json"), True
        changed = {}
        for name, value in new.items():
            if name not in old or (planned and value is None):
                continue
            if not _same_setting(name, old[name], value):
                changed[name] = (old[name], value)
        return changed

    # --- writing -----------------------------------------------------------------------------

    def clear(self) -> None:
        """Deletes the files and folders of a run (`RUN_FILES`, `RUN_FOLDERS`), finished or not:
        `--overwrite`. Other files in the directory are left alone."""
        for name in RUN_FILES:
            if os.path.isfile(path := self.file(name)):
                os.remove(path)
        for name in RUN_FOLDERS:
            shutil.rmtree(self.file(name), ignore_errors=True)

    def make(self) -> "RunDirectory":
        """Creates it with `plots/`, `checkpoints/` and `tokenizers/`; returns it.

        Raises:
            UserInputError: if the directory cannot be created (a file in the way, no
                permission).
        """
        try:
            for sub in ("plots", "checkpoints", "tokenizers"):
                os.makedirs(self.file(sub), exist_ok=True)
        except OSError as error:
            raise UserInputError(
                f"cannot create the run directory {self.path!r} ({error.strerror}); pass "
                "another --out."
            ) from None
        return self

    def write_json(self, name: str, content: dict) -> None:
        """`content` as indented UTF-8 JSON (accents kept) in file `name`, atomically (a
        rewritten `metrics.json` or `state.json` is never half a file)."""
        partial = self.file(f".partial-{name}")
        try:
            with open(partial, "w", encoding="utf-8") as handle:
                json.dump(content, handle, indent=2, ensure_ascii=False)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            os.remove(partial)
            raise
        os.replace(partial, self.file(name))

    def write_config(self, config: Any, **extra: Any) -> None:
        """`config.json`: the settings of `config` (`TrainConfig.settings`), its `run_dir`,
        `extra`, and the Keras and TensorFlow versions."""
        import keras
        import tensorflow as tf

        content = {
            **config.settings,
            "run_dir": config.run_dir,
            **extra,
            "keras_version": keras.__version__,
            "tensorflow_version": tf.__version__,
        }
        self.write_json("config.json", content)

    def finish(self) -> None:
        """After `metrics.json`: the run is finished; its `state.json` and backup go."""
        if os.path.isfile(path := self.file(STATE)):
            os.remove(path)
        shutil.rmtree(self.file("backup"), ignore_errors=True)

    # --- reading a finished run --------------------------------------------------------------

    def check_files(self) -> None:
        """`check_run_files` of this directory."""
        check_run_files(self.path)

    def check_finished(self) -> None:
        """`check_finished` of this directory."""
        check_finished(self.path)

    def translation_files(self) -> tuple[str, dict[str, str]]:
        """`run_files` of this directory."""
        return run_files(self.path)


def _same_setting(name: str, old: Any, new: Any) -> bool:
    if name in PATH_SETTINGS and isinstance(old, str) and isinstance(new, str):
        return os.path.realpath(old) == os.path.realpath(new)
    return old == new


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _shown(value: Any) -> str:
    return "(default)" if value is None else str(value)


def _damaged(path: str, reason: str) -> DamagedRunError:
    return DamagedRunError(f"{path} is damaged: {reason}. Re-run training or restore the file.")


def check_run_files(run_dir) -> None:
    """Raise `DamagedRunError` when a run directory's `config.json` (not a JSON object) or
    `model.keras` (not a complete zip with Keras's config and weights) is damaged."""
    config = os.path.join(run_dir, "config.json")
    if os.path.isfile(config):
        try:
            with open(config, encoding="utf-8") as handle:
                content = json.load(handle)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise _damaged(config, f"not valid JSON ({error})") from None
        if not isinstance(content, dict):
            kind = type(content).__name__
            raise _damaged(config, f"it holds a JSON {kind}, not an object of settings")
    model = os.path.join(run_dir, "model.keras")
    if os.path.isfile(model):
        try:
            with zipfile.ZipFile(model) as archive:
                names, damaged = set(archive.namelist()), archive.testzip()
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            reason = f"not a complete .keras archive ({os.path.getsize(model)} bytes; {error})"
            raise _damaged(model, reason) from None
        if damaged is not None:
            raise _damaged(model, f"member {damaged} fails its checksum")
        if lacking := sorted({"config.json", "model.weights.h5"} - names):
            raise _damaged(model, f"the archive lacks {', '.join(lacking)}")


def check_finished(run_dir) -> None:
    """`UserInputError` when `run_dir` holds a training run that has not finished (interrupted:
    `state.json` or `backup/` without `metrics.json`), saying how to finish it."""
    if not os.path.exists(run_dir):
        raise FileNotFoundError(
            f"{run_dir} does not exist; pass the --out directory of a finished "
            "`keras-transformer train` run."
        )
    if not os.path.isdir(run_dir):
        raise UserInputError(
            f"{run_dir} is a file, not a run directory; pass the --out directory of a finished "
            "`keras-transformer train` run."
        )
    if os.path.isfile(os.path.join(run_dir, "metrics.json")):
        return
    if any(os.path.exists(os.path.join(run_dir, name)) for name in (STATE, "backup")):
        raise UserInputError(
            f"{run_dir} holds an unfinished training run; {_finish_advice(run_dir)}"
        )


def _finish_advice(run_dir) -> str:
    """How to finish an unfinished run: the same command resumes it, unless its --time-budget
    is used up, or half used before a first epoch finished (a budget too small to train, whose
    resume would get less time still): then a larger budget and --overwrite."""
    state = RunDirectory(run_dir).state()
    budget = (state.get("settings") or {}).get("time_budget")
    used = float(state.get("wall_seconds") or 0.0)
    same = "run the same `keras-transformer train` command again to resume and finish it."
    if not isinstance(budget, int | float) or budget <= 0:
        return f"it was interrupted: {same}"
    epochs = int(state.get("epochs_run") or 0)
    if used < budget and (epochs or used < budget / 2):
        return (
            f"it was interrupted with {budget - used:.0f} s of its {budget:g} s budget left: {same}"
        )
    trained = f"{epochs} epoch(s) trained" if epochs else "no epoch trained"
    return (
        f"its --time-budget of {budget:g} s is {'used up' if used >= budget else 'mostly used'} "
        f"({used:.0f} s, {trained}), so resuming it would not train it: run the same "
        "`keras-transformer train` command with a larger --time-budget and --overwrite."
    )


def run_files(run_dir) -> tuple[str, dict[str, str]]:
    """`(architecture, files)` of a translation run: `model.keras`, `tokenizers/{source,target}`
    or `joint`. Raises `FileNotFoundError`, `DamagedRunError` or `UserInputError`."""
    check_finished(run_dir)  # an interrupted run says so, not that its model is missing
    check_run_files(run_dir)  # a damaged config.json or model.keras says so first
    config_path, architecture = os.path.join(run_dir, "config.json"), "encoder-decoder"
    if os.path.isfile(config_path):
        with open(config_path, encoding="utf-8") as handle:
            architecture = json.load(handle).get("architecture") or architecture
    if architecture not in TRANSLATING_ARCHITECTURES:
        raise UserInputError(
            f"{run_dir} holds a run of --architecture {architecture}, which does "
            f"not translate; pass a run of "
            f"{' or '.join(TRANSLATING_ARCHITECTURES)}."
        )
    sides = ("joint",) if architecture == "decoder-only" else ("source", "target")
    files = {"model": os.path.join(run_dir, "model.keras")}
    files.update({side: os.path.join(run_dir, "tokenizers", side, "vocab.txt") for side in sides})
    if missing := [os.path.relpath(p, run_dir) for p in files.values() if not os.path.isfile(p)]:
        raise FileNotFoundError(
            f"{run_dir} is not a run directory of `keras-transformer train`: "
            f"missing {', '.join(missing)}. Pass the --out directory of a "
            f"finished training run."
        )
    for side in sides:
        try:
            with open(files[side], encoding="utf-8") as handle:
                tokens = set(handle.read().split())
        except UnicodeDecodeError as error:
            raise _damaged(files[side], f"not UTF-8 text ({error.reason})") from None
        if not {"[PAD]", "[UNK]", "[START]", "[END]"} <= tokens:
            raise _damaged(files[side], "it lacks [PAD] [UNK] [START] [END]")
    return architecture, files
