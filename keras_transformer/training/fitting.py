"""`fit_run`: the `model.fit` of every training command, with the run directory's callbacks.

Every run (`keras-transformer train` for each architecture, and
`keras-transformer pretrain`) fits through here, so all of them get the same
guarantees:

- **resume**: `AtomicBackupAndRestore` under `<run_dir>/backup`; running the
  same command again after a kill continues from the last finished epoch;
- **history**: `history.csv`, one row per epoch, continuous across resumes;
- **best weights**: `checkpoints/best.weights.h5` at the lowest `val_loss`,
  never from an epoch whose loss is NaN, competing after a resume against the
  best value logged before; loaded into the model at the end;
- **NaN**: `TerminateOnNaN` stops training; the last good weights are kept,
  or, if no epoch was good, a `ValueError` says how to fix it;
- early stopping on `val_loss`, and TensorBoard logs under `<run_dir>/logs`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import sys
import time

import keras
import numpy as np
import sacrebleu

from keras_transformer.analysis.plots import read_history
from keras_transformer.training.callbacks import (
    AtomicBackupAndRestore,
    BestWeights,
    ResumableCSVLogger,
)

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What `fit_run` reports.

    Args:
        seconds: wall-clock time of `model.fit` (this process only).
        epochs_run: epochs trained by this process (fewer after a resume).
        stopped_on_nan: whether training stopped on a NaN loss.
        best_weights: the path of the best checkpoint (it may not exist if
            no epoch produced a finite validation loss).
    """

    seconds: float
    epochs_run: int
    stopped_on_nan: bool
    best_weights: str


def normalize(text: str) -> str:
    """Whitespace-normalized text, the form tokenizers round-trip exactly."""
    return " ".join(text.split())


def translation_metrics(
    model: keras.Model,
    fit: FitResult,
    test_ds,
    test_pairs: list[tuple[str, str]],
    translate,
    tokens_per_epoch: int,
) -> dict:
    """The `metrics.json` of a translation run: test scores, speed, size, samples.

    `translate(sources)` returns the model's translations of the test sources;
    references are whitespace-normalised, the form the tokenizers round-trip.
    BLEU counts word n-grams, so one-word outputs (German compounds) score 0
    even when right; chrF (character n-grams) is reported beside it.
    """
    test_loss, test_token_accuracy = model.evaluate(test_ds, verbose=0)
    sources = [s for s, _ in test_pairs]
    references = [normalize(t) for _, t in test_pairs]
    predictions = list(translate(sources))
    pairs = list(zip(sources, references, predictions, strict=True))
    return {
        "test_exact_match": float(np.mean([p == r for _, r, p in pairs])),
        "test_token_accuracy": float(test_token_accuracy),
        "test_loss": float(test_loss),
        "test_bleu": float(sacrebleu.corpus_bleu(predictions, [references]).score),
        "test_chrf": float(sacrebleu.corpus_chrf(predictions, [references]).score),
        "train_seconds": round(fit.seconds, 2),
        "train_tokens_per_second": round(tokens_per_epoch * fit.epochs_run / fit.seconds, 1),
        "epochs_run": fit.epochs_run,
        "stopped_on_nan": fit.stopped_on_nan,
        "parameters": int(model.count_params()),
        "num_test": len(references),
        "samples": [{"source": s, "reference": r, "prediction": p} for s, r, p in pairs[:5]],
    }


def best_logged(history_csv: str, column: str) -> float | None:
    """Smallest finite value of `column` in an existing history file (None if none)."""
    if not os.path.isfile(history_csv):
        return None
    values = [v for v in read_history(history_csv).get(column, []) if math.isfinite(v)]
    return min(values) if values else None


def fit_run(
    model: keras.Model,
    train_ds,
    val_ds,
    *,
    run_dir: str,
    epochs: int,
    early_stopping_patience: int,
    tensorboard: bool = True,
) -> FitResult:
    """Fits `model` (compiled) with the run directory's callbacks; see the module docstring.

    Args:
        model: a compiled model.
        train_ds: training batches.
        val_ds: validation batches (`val_loss` chooses the best weights).
        run_dir: the run directory (`checkpoints/` is created if missing).
        epochs: total epochs of the run (a resumed run trains the rest).
        early_stopping_patience: epochs without a lower `val_loss` before stopping.
        tensorboard: write TensorBoard logs under `<run_dir>/logs`.

    Returns:
        A `FitResult`. The model holds the best weights.

    Raises:
        ValueError: if the loss became NaN before any epoch was checkpointed.
    """
    best = os.path.join(run_dir, "checkpoints", "best.weights.h5")
    os.makedirs(os.path.dirname(best), exist_ok=True)
    history_csv = os.path.join(run_dir, "history.csv")
    callbacks = [
        keras.callbacks.TerminateOnNaN(),
        # Resuming keeps the best validation loss so far as the bar to beat.
        BestWeights(best, "val_loss", best_logged(history_csv, "val_loss")),
        ResumableCSVLogger(history_csv),
        AtomicBackupAndRestore(os.path.join(run_dir, "backup")),
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=early_stopping_patience),
    ]
    if tensorboard:
        callbacks.append(
            keras.callbacks.TensorBoard(os.path.join(run_dir, "logs"), write_graph=False)
        )
    start = time.perf_counter()
    history = model.fit(
        train_ds,
        validation_data=val_ds,
        epochs=epochs,
        callbacks=callbacks,
        shuffle=False,  # the tf.data pipelines shuffle themselves
        # Keras's progress bar on a terminal; one line per epoch in logs and CI.
        verbose=1 if sys.stdout.isatty() else 2,
    )
    seconds = time.perf_counter() - start
    losses = history.history.get("loss", [])
    diverged = any(not math.isfinite(v) for v in losses)
    if diverged:
        if not os.path.exists(best):
            raise ValueError(
                "training diverged (NaN loss) before any checkpoint was saved; lower the "
                "learning rate (raise --warmup-steps) or try --mixed-precision none."
            )
        logger.warning(
            "training stopped: the loss became NaN. Keeping the last good checkpoint %s.", best
        )
    if os.path.exists(best):
        model.load_weights(best)
    return FitResult(seconds, len(losses), diverged, best)
