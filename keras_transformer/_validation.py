"""Argument checks shared by layers and builders: one clear message each."""

from __future__ import annotations

import argparse


def check_positive_int(name: str, value) -> None:
    """Raise `ValueError` unless `value` is an int > 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer; received {name}={value!r}.")


def check_rate(name: str, value) -> None:
    """Raise `ValueError` unless `value` is a number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(
            f"{name} must be a number in [0, 1); received {name}={value!r}. Use 0.0 to disable it."
        )


def check_divisible(d_model: int, num_heads: int) -> None:
    """Raise `ValueError` unless `d_model` splits evenly into `num_heads` heads."""
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} must be divisible by num_heads={num_heads}; "
            f"pick num_heads among the divisors of d_model or pass key_dim explicitly."
        )


def float_flag(minimum: float, maximum: float | None = None, *, open_minimum: bool = False,
               open_maximum: bool = True):  # fmt: skip
    """An argparse `type=` for a float flag: finite and inside the range, else one clear line.

    `nan`, `inf` and values outside `[minimum, maximum)` (ends per `open_*`) are
    rejected while the command line is parsed, before anything is loaded or written.

    Example:

    >>> rate = float_flag(0.0, 1.0)
    >>> rate("0.1")
    0.1
    >>> rate("nan")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: 'nan' is not a finite number; give a number in [0.0, 1.0).
    """
    import math

    low, high = "(" if open_minimum else "[", ")" if open_maximum else "]"
    span = f"{low}{minimum}, inf)" if maximum is None else f"{low}{minimum}, {maximum}{high}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a number; give a number in {span}."
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a finite number; give a number in {span}."
            )
        below = value <= minimum if open_minimum else value < minimum
        above = maximum is not None and (value >= maximum if open_maximum else value > maximum)
        if below or above:
            raise argparse.ArgumentTypeError(f"{text} is outside {span}; give a number in {span}.")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


RATE = float_flag(0.0, 1.0)
"""A probability-like rate in [0, 1): dropout, label smoothing."""

FRACTION = float_flag(0.0, 1.0, open_minimum=True)
"""A share in (0, 1): validation fraction, mask rate."""

POSITIVE = float_flag(0.0, None, open_minimum=True)
"""A finite number > 0: learning rates."""

NON_NEGATIVE = float_flag(0.0, None)
"""A finite number >= 0: the beam-search length-penalty exponent."""


def check_run_files(run_dir) -> None:
    """Raise `DamagedRunError` when a run directory's `config.json` or `model.keras` is damaged.

    Checks only files that exist (a missing file is the loader's message):
    `config.json` must hold a JSON object, `model.keras` must be a complete zip
    archive holding Keras's `config.json` and weights. Reads no TensorFlow.
    """
    import json
    import os
    import zipfile

    from keras_transformer.errors import DamagedRunError

    run_dir = os.fspath(run_dir)
    config = os.path.join(run_dir, "config.json")
    if os.path.isfile(config):
        try:
            with open(config, encoding="utf-8") as handle:
                content = json.load(handle)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise DamagedRunError(
                f"{config} is damaged: not valid JSON ({error}). Re-run training or restore the "
                "file."
            ) from None
        if not isinstance(content, dict):
            raise DamagedRunError(
                f"{config} is damaged: it holds a JSON {type(content).__name__}, not an object "
                "of settings. Re-run training or restore the file."
            )
    model = os.path.join(run_dir, "model.keras")
    if os.path.isfile(model):
        size = os.path.getsize(model)
        try:
            with zipfile.ZipFile(model) as archive:
                names = set(archive.namelist())
                damaged = archive.testzip()
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise DamagedRunError(
                f"{model} is damaged: not a complete .keras archive ({size} bytes; {error}). "
                "Re-run training or restore the file."
            ) from None
        if damaged is not None:
            raise DamagedRunError(
                f"{model} is damaged: member {damaged} fails its checksum. Re-run training or "
                "restore the file."
            )
        if not {"config.json", "model.weights.h5"} <= names:
            raise DamagedRunError(
                f"{model} is damaged: the archive lacks "
                f"{', '.join(sorted({'config.json', 'model.weights.h5'} - names))}. Re-run "
                "training or restore the file."
            )


TRANSLATING_ARCHITECTURES = ("encoder-decoder", "decoder-only")
"""Architectures whose runs `translate` and `export` serve."""


def run_files(run_dir) -> tuple[str, dict[str, str]]:
    """`(architecture, files)` of a translation run directory, after `check_run_files`.

    An encoder-decoder run holds `model.keras`, `tokenizers/source/vocab.txt`
    and `tokenizers/target/vocab.txt`; a decoder-only run (`config.json`'s
    `architecture`) holds `model.keras` and `tokenizers/joint/vocab.txt`.
    Raises `FileNotFoundError` naming the missing files, `DamagedRunError` for
    a damaged `config.json`, `model.keras` or vocabulary, and `UserInputError`
    for a run of an architecture that does not translate. Reads no TensorFlow.
    """
    import json
    import os

    from keras_transformer.errors import DamagedRunError, UserInputError

    run_dir = os.fspath(run_dir)
    check_run_files(run_dir)  # a damaged config.json or model.keras says so first
    config_path = os.path.join(run_dir, "config.json")
    architecture = "encoder-decoder"  # runs written before config.json named it
    if os.path.isfile(config_path):
        with open(config_path, encoding="utf-8") as handle:
            architecture = json.load(handle).get("architecture") or architecture
    if architecture not in TRANSLATING_ARCHITECTURES:
        raise UserInputError(
            f"{run_dir} holds a run of --architecture {architecture}, which does not "
            f"translate; pass a run of {' or '.join(TRANSLATING_ARCHITECTURES)}."
        )
    sides = ("joint",) if architecture == "decoder-only" else ("source", "target")
    files = {"model": os.path.join(run_dir, "model.keras")}
    files.update({side: os.path.join(run_dir, "tokenizers", side, "vocab.txt") for side in sides})
    missing = [path for path in files.values() if not os.path.isfile(path)]
    if missing:
        raise FileNotFoundError(
            f"{run_dir} is not a run directory of `keras-transformer train`: missing "
            f"{', '.join(os.path.relpath(p, run_dir) for p in missing)}. Pass the --out "
            "directory of a finished training run."
        )
    for side in sides:
        try:
            with open(files[side], encoding="utf-8") as handle:
                tokens = handle.read().split()
        except UnicodeDecodeError as error:
            tokens, reason = None, f"not UTF-8 text ({error.reason})"
        else:
            reason = "it lacks [PAD] [UNK] [START] [END]"
        if tokens is None or not {"[PAD]", "[UNK]", "[START]", "[END]"} <= set(tokens):
            raise DamagedRunError(
                f"{files[side]} is damaged: {reason}. Re-run training or restore the file."
            )
    return architecture, files


class OneLineArgumentParser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (`PROG: error: MESSAGE (see PROG --help)`), exit 2.

    argparse's own `error` prints the whole usage first; the command line
    promises one line per failure.
    """

    def error(self, message: str):
        message = message.rstrip(".")
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
