"""`train --init-from RUN_DIR`: continue a translation run, or fine-tune a pre-trained encoder.

`load_init(config, recipe)` reads what `--init-from` names, once: for a translation recipe the
run to continue (`load_run`), for the classifier the pre-training run (`load_pretrained`).

`load_run(config)` reads a finished encoder-decoder or decoder-only run (its `config.json`,
`model.keras` and tokenizers) and refuses, with one line, one that does not fit the new run: another
architecture, or a size given on the command line that differs from the run's. The sizes left
unset are the run's (`TranslationRun.inherited_sizes`); new data, a new budget or more epochs are the new run's.
"""

import dataclasses
import hashlib
import json
import os

import keras

from keras_transformer import data
from keras_transformer._registration import missing_class_hint
from keras_transformer.errors import UserInputError
from keras_transformer.training.config import INIT_FROM_SIZES
from keras_transformer.training.pretrain_config import OBJECTIVE

CONTINUED = ("translation", "prefix")
"""Recipes that continue a translation run (`load_run`); the classifier fine-tunes a pre-training
run (`load_pretrained`)."""


def load_init(config, recipe: str):
    """What `config.init_from` names, loaded and checked before any file is written: a
    `TranslationRun` for the recipes of `CONTINUED`, else the `(model, tokenizer, config)` of a
    pre-training run; None without `--init-from`."""
    if not config.init_from:
        return None
    if recipe in CONTINUED:
        return load_run(config)
    return load_pretrained(config.init_from)


@dataclasses.dataclass
class TranslationRun:
    """A finished translation run to continue from.

    Args:
        path: its run directory.
        config: its `config.json`.
        tokenizers: `{"source", "target"}` (encoder-decoder) or `{"joint"}` (decoder-only).
        record: what the new `config.json` says under `init_from` (path, config hash, scores).
    """

    path: str
    config: dict
    tokenizers: dict
    record: dict

    def inherited_sizes(self, config) -> dict:
        """The sizes `config` leaves unset, taken from the run (`plan.resolve_sizes`)."""
        return {
            name: self.config[name]
            for name in INIT_FROM_SIZES
            if getattr(config, name) is None and self.config.get(name) is not None
        }

    def load_weights(self, model: keras.Model) -> None:
        """The run's weights into `model` (built with the run's sizes and vocabularies)."""
        try:
            model.load_weights(os.path.join(self.path, "model.keras"))
        except Exception as error:  # a mismatch or a damaged file: one line naming the run
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise UserInputError(
                f"cannot start from the weights of {self.path} ({first[:200]}); train a new run "
                "instead of --init-from"
            ) from None


def load_run(config) -> TranslationRun:
    """The run `config.init_from` names, checked against `config` (see the module docstring).

    Raises:
        FileNotFoundError: not a finished run directory.
        UserInputError: another architecture, or a given size that differs from the run's.
    """
    path = config.init_from
    files = {name: os.path.join(path, name) for name in ("config.json", "model.keras")}
    if missing := [name for name, file in files.items() if not os.path.isfile(file)]:
        raise FileNotFoundError(
            f"--init-from {path} is not a finished training run (missing {', '.join(missing)}); "
            "pass the --out directory of a finished keras-transformer train run."
        )
    try:
        with open(files["config.json"], "rb") as handle:
            raw = handle.read()
        old = json.loads(raw)
    except (OSError, ValueError) as error:
        raise UserInputError(
            f"cannot read {files['config.json']}: {error}".splitlines()[0]
        ) from None
    if "objective" in old or "architecture" not in old:  # a pretrain run: fine-tuning only
        raise UserInputError(
            f"--init-from {path} is not a translation run (a pretrain run fine-tunes an encoder: "
            "--architecture encoder --task reviews or imdb); pass a train run's --out directory."
        )
    architecture = old["architecture"]
    if architecture != config.architecture:
        raise UserInputError(
            f"--init-from {path} is an {architecture} run; it cannot start --architecture "
            f"{config.architecture} (pass --architecture {architecture}, or train a new run)."
        )
    for name in INIT_FROM_SIZES:
        given = getattr(config, name)
        if given is not None and old.get(name) is not None and given != old[name]:
            flag = name.replace("_", "-")
            raise UserInputError(
                f"--{flag} {given} does not fit --init-from {path} ({name}={old[name]}); drop "
                f"--{flag} to continue from that run, or train a new one."
            )
    names = ("joint",) if architecture == "decoder-only" else ("source", "target")
    tokenizers = {
        n: data.WordPieceTokenizer.load(os.path.join(path, "tokenizers", n)) for n in names
    }
    record = {"path": os.path.abspath(path), "config_sha256": hashlib.sha256(raw).hexdigest()}
    metrics_path = os.path.join(path, "metrics.json")
    if os.path.isfile(metrics_path):
        try:
            with open(metrics_path, encoding="utf-8") as handle:
                metrics = json.load(handle)
        except ValueError as error:  # not JSON, or not UTF-8: a damaged run
            raise UserInputError(f"cannot read {metrics_path}: {error}".splitlines()[0]) from None
        record["metrics"] = {
            k: metrics[k] for k in ("test_bleu", "test_chrf", "test_loss") if k in metrics
        }
    return TranslationRun(path, old, tokenizers, record)


def load_pretrained(run_dir: str) -> tuple[keras.Model, data.WordPieceTokenizer, dict]:
    """The masked language model, tokenizer and config of a `pretrain` run directory.

    Raises:
        FileNotFoundError: if `run_dir` is not a finished pre-training run.
        UserInputError: if its `config.json` is unreadable or not a pre-training config.
    """
    config_path, model_path = (os.path.join(run_dir, n) for n in ("config.json", "model.keras"))
    if missing := [p for p in (config_path, model_path) if not os.path.isfile(p)]:
        raise FileNotFoundError(
            f"{run_dir} is not a finished pre-training run directory (missing "
            f"{', '.join(os.path.basename(p) for p in missing)}); run keras-transformer "
            "pretrain --out DIR first."
        )
    try:
        with open(config_path) as handle:
            config = json.load(handle)
    except (OSError, json.JSONDecodeError) as error:
        raise UserInputError(f"cannot read {config_path}: {error}") from None
    if config.get("objective") != OBJECTIVE:
        raise UserInputError(
            f"{run_dir} was not written by keras-transformer pretrain (config.json has no "
            f'"objective": "{OBJECTIVE}"); --init-from needs a pre-training run.'
        )
    tokenizer = data.WordPieceTokenizer.load(os.path.join(run_dir, "tokenizers", "source"))
    try:
        model = keras.models.load_model(model_path, safe_mode=True)
    except Exception as error:  # a truncated or foreign file: say which one
        detail = missing_class_hint(error) or error
        raise UserInputError(f"cannot load {model_path}: {detail}".splitlines()[0]) from None
    return model, tokenizer, config
