"""Argument checks shared by layers and builders: one clear message each."""

import argparse
import json
import math
import os
import zipfile

from keras_transformer.errors import DamagedRunError, UserInputError


def check_positive_int(name: str, value) -> None:
    """Raise `ValueError` unless `value` is an int > 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer; received {name}={value!r}.")


def check_rate(name: str, value) -> None:
    """Raise `ValueError` unless `value` is a number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be a number in [0, 1); received {name}={value!r}. Use 0.0 "
                         f"to disable it.")  # fmt: skip


def check_divisible(d_model: int, num_heads: int) -> None:
    """Raise `ValueError` unless `d_model` splits evenly into `num_heads` heads."""
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}; pick "
                         f"num_heads among the divisors of d_model or pass key_dim explicitly.")  # fmt: skip


def float_flag(minimum: float, maximum: float | None = None, *, open_minimum: bool = False,
               open_maximum: bool = True):  # fmt: skip
    """An argparse `type=` for a finite float in `[minimum, maximum)` (ends per `open_*`).

    Example:
    >>> rate = float_flag(0.0, 1.0)
    >>> rate("0.1")
    0.1
    >>> rate("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number; give a number in [0.0, 1.0).
    """
    low, high = "(" if open_minimum else "[", ")" if open_maximum else "]"
    span = f"{low}{minimum}, inf)" if maximum is None else f"{low}{minimum}, {maximum}{high}"

    def fail(problem: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(f"{problem}; give a number in {span}.")

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise fail(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise fail(f"{text!r} is not a finite number")
        below = value <= minimum if open_minimum else value < minimum
        above = maximum is not None and (value >= maximum if open_maximum else value > maximum)
        if below or above:
            raise fail(f"{text} is outside {span}")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


RATE = float_flag(0.0, 1.0)  # a rate in [0, 1): dropout, label smoothing
FRACTION = float_flag(0.0, 1.0, open_minimum=True)  # a share in (0, 1): validation, mask rate
POSITIVE = float_flag(0.0, None, open_minimum=True)  # a finite number > 0: learning rates
NON_NEGATIVE = float_flag(0.0, None)  # a finite number >= 0: beam search's length penalty
TRANSLATING_ARCHITECTURES = ("encoder-decoder", "decoder-only")  # what translate/export serve


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


def run_files(run_dir) -> tuple[str, dict[str, str]]:
    """`(architecture, files)` of a translation run: `model.keras`, `tokenizers/{source,target}`
    or `joint`. Raises `FileNotFoundError`, `DamagedRunError` or `UserInputError`."""
    check_run_files(run_dir)  # a damaged config.json or model.keras says so first
    config_path, architecture = os.path.join(run_dir, "config.json"), "encoder-decoder"
    if os.path.isfile(config_path):
        with open(config_path, encoding="utf-8") as handle:
            architecture = json.load(handle).get("architecture") or architecture
    if architecture not in TRANSLATING_ARCHITECTURES:
        raise UserInputError(f"{run_dir} holds a run of --architecture {architecture}, which does "
                             f"not translate; pass a run of "
                             f"{' or '.join(TRANSLATING_ARCHITECTURES)}.")  # fmt: skip
    sides = ("joint",) if architecture == "decoder-only" else ("source", "target")
    files = {"model": os.path.join(run_dir, "model.keras")}
    files.update({side: os.path.join(run_dir, "tokenizers", side, "vocab.txt") for side in sides})
    if missing := [os.path.relpath(p, run_dir) for p in files.values() if not os.path.isfile(p)]:
        raise FileNotFoundError(f"{run_dir} is not a run directory of `keras-transformer train`: "
                                f"missing {', '.join(missing)}. Pass the --out directory of a "
                                f"finished training run.")  # fmt: skip
    for side in sides:
        try:
            with open(files[side], encoding="utf-8") as handle:
                tokens = set(handle.read().split())
        except UnicodeDecodeError as error:
            raise _damaged(files[side], f"not UTF-8 text ({error.reason})") from None
        if not {"[PAD]", "[UNK]", "[START]", "[END]"} <= tokens:
            raise _damaged(files[side], "it lacks [PAD] [UNK] [START] [END]")
    return architecture, files


class OneLineArgumentParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (`PROG: error: MESSAGE (see PROG --help)`), exit 2,
    instead of argparse's whole usage: the command line promises one line per failure."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message.rstrip('.')} (see {self.prog} --help)\n")
