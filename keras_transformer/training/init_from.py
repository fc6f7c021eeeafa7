"""`train --init-from RUN_DIR` on a translation run: continue from its weights and tokenizers.

`load_run(config)` reads a finished encoder-decoder or decoder-only run (its `config.json`,
`model.keras` and tokenizers) and refuses, with one line, one that does not fit the new run: another
architecture, or a size given on the command line that differs from the run's. The sizes left
unset are the run's (`inherited_sizes`); new data, a new budget or more epochs are the new run's.
"""

import dataclasses
import hashlib
import json
import os

import keras

from keras_transformer import data
from keras_transformer.training.config import INIT_FROM_SIZES


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

    def load_weights(self, model: keras.Model) -> None:
        """The run's weights into `model` (built with the run's sizes and vocabularies)."""
        try:
            model.load_weights(os.path.join(self.path, "model.keras"))
        except Exception as error:  # a mismatch or a damaged file: one line naming the run
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise ValueError(
                f"cannot start from the weights of {self.path} ({first[:200]}); train a new run "
                "instead of --init-from"
            ) from None


def load_run(config) -> TranslationRun:
    """The run `config.init_from` names, checked against `config` (see the module docstring).

    Raises:
        FileNotFoundError: not a finished run directory.
        ValueError: another architecture, or a given size that differs from the run's.
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
        raise ValueError(f"cannot read {files['config.json']}: {error}".splitlines()[0]) from None
    if "objective" in old or "architecture" not in old:  # a pretrain run: fine-tuning only
        raise ValueError(
            f"--init-from {path} is not a translation run (a pretrain run fine-tunes an encoder: "
            "--architecture encoder --task reviews or imdb); pass a train run's --out directory."
        )
    architecture = old["architecture"]
    if architecture != config.architecture:
        raise ValueError(
            f"--init-from {path} is an {architecture} run; it cannot start --architecture "
            f"{config.architecture} (pass --architecture {architecture}, or train a new run)."
        )
    for name in INIT_FROM_SIZES:
        given = getattr(config, name)
        if given is not None and old.get(name) is not None and given != old[name]:
            flag = name.replace("_", "-")
            raise ValueError(
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
        with open(metrics_path, encoding="utf-8") as handle:
            metrics = json.load(handle)
        record["metrics"] = {
            k: metrics[k] for k in ("test_bleu", "test_chrf", "test_loss") if k in metrics
        }
    return TranslationRun(path, old, tokenizers, record)


def inherited_sizes(config, run: TranslationRun) -> dict:
    """The sizes `config` leaves unset, taken from the run (`dataclasses.replace` them)."""
    return {
        name: run.config[name]
        for name in INIT_FROM_SIZES
        if getattr(config, name) is None and run.config.get(name) is not None
    }
