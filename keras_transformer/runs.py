"""Reading a run directory: which files a translation run has, and whether they are damaged."""

import json
import os
import zipfile

from keras_transformer.choices import TRANSLATING_ARCHITECTURES
from keras_transformer.errors import DamagedRunError, UserInputError


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
    if os.path.isfile(os.path.join(run_dir, "metrics.json")):
        return
    if any(os.path.exists(os.path.join(run_dir, name)) for name in ("state.json", "backup")):
        raise UserInputError(
            f"{run_dir} holds an unfinished training run (it was interrupted); finish it by "
            f"running the same `keras-transformer train` command again."
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
