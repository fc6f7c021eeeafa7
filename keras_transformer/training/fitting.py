"""`fit_run`: the `model.fit` of every `train` and `pretrain` run, with its callbacks.

They resume from `<run_dir>/backup`, log `history.csv`, keep `checkpoints/best.weights.h5` at
the lowest finite `val_loss`, stop on NaN, `val_loss` or a converged exact-match rate, and write
TensorBoard logs under `logs/`."""

import dataclasses
import logging
import math
import os
import sys

import keras

from keras_transformer.errors import UserInputError
from keras_transformer.runs import RunDirectory
from keras_transformer.training import callbacks as run_callbacks
from keras_transformer.training import rundir
from keras_transformer.training.losses import MaskedAccuracy, MaskedSequenceAccuracy
from keras_transformer.training.losses import MaskedSparseCategoricalCrossentropy as MaskedLoss
from keras_transformer.training.optimizer import paper_adam
from keras_transformer.visualization.figures import read_history

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class FitResult:
    """What `fit_run` reports.

    Args:
        seconds: wall-clock time of `model.fit`, summed over every process of the run (an
            interrupted run resumed counts each part).
        epochs_run: epochs trained, over every process of the run.
        stopped_on_nan: whether training stopped on a NaN loss.
        best_weights: the path of the best checkpoint (absent if no epoch had a finite loss).
        steps: optimizer updates made, over the whole run.
        stop_reason: why training ended before its last epoch (early stopping, converged, a
            time budget), or None.
        last_weights: the path of the weights training ended with, where `fit_run` was asked to
            keep them (`keep_last`) and they are not the best checkpoint's; else None.
    """

    seconds: float
    epochs_run: int
    stopped_on_nan: bool
    best_weights: str
    steps: int = 0
    stop_reason: str | None = None
    last_weights: str | None = None

    def metrics(self, model: keras.Model) -> dict:
        """The entries every `metrics.json` has: time, epochs, NaN stop, parameters."""
        return {
            "train_seconds": round(self.seconds, 2),
            "epochs_run": self.epochs_run,
            "stopped_on_nan": self.stopped_on_nan,
            "parameters": int(model.count_params()),
        }


def compile_model(
    model: keras.Model, plan, *, loss=None, metrics=None
) -> keras.optimizers.Optimizer:
    """Compiles `model` as `plan` (`plan.RunPlan`) says: the paper's Adam at its learning rate,
    XLA or not, and unless given the masked loss (its label smoothing) and accuracies. Returns
    Adam."""
    optimizer = paper_adam(plan.learning_rate)
    loss = loss or MaskedLoss(label_smoothing=plan.settings.label_smoothing)
    metrics = metrics or [MaskedAccuracy(), MaskedSequenceAccuracy()]
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=plan.xla)
    build_optimizer(model)
    return optimizer


def build_optimizer(model: keras.Model) -> None:
    """Makes the compiled optimizer's variables (Adam's moments) now, not inside `fit`'s first
    step: a variable made while a `tf.function` traces makes TensorFlow trace it a second time,
    which doubled the first epoch of a small run (docs/performance.md, "Starting a run")."""
    model.optimizer.build(model.trainable_variables)


def classifier_compile(name: str = "accuracy") -> dict:
    """`loss` and `metrics` of a model whose logits score one class per example."""
    return {
        "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        "metrics": [keras.metrics.SparseCategoricalAccuracy(name=name)],
    }


def best_logged(history_csv: str, column: str) -> float | None:
    """Smallest finite value of `column` in an existing history file (None if none)."""
    logged = read_history(history_csv).get(column, []) if os.path.isfile(history_csv) else []
    values = [v for v in logged if math.isfinite(v)]
    return min(values) if values else None


def fit_run(
    model: keras.Model,
    train_ds,
    val_ds,
    *,
    run_dir: str,
    epochs: int,
    early_stopping_patience: int | None,
    tensorboard: bool = True,
    callbacks: list | None = None,
    verbose: int | None = None,
    clock=None,
    keep_last: bool = False,
) -> FitResult:
    """Fits `model` (compiled) with the run directory's callbacks; see the module docstring.

    Args:
        model: a compiled model.
        train_ds: training batches.
        val_ds: validation batches (`val_loss` chooses the best weights).
        run_dir: the run directory (`checkpoints/` is created if missing).
        epochs: total epochs of the run (a resumed run trains the rest).
        early_stopping_patience: epochs without a lower `val_loss` before stopping; None: no
            early stopping (a time budget ends the run).
        tensorboard: write TensorBoard logs under `<run_dir>/logs`.
        callbacks: more callbacks, run after the run directory's (e.g. `budget.TimeBudget`).
        verbose: `model.fit`'s; None: a progress bar on a terminal, else one line per epoch
            (0 when a `TimeBudget(progress=True)` reports instead).
        clock: a `wallclock.RunClock`: the run's wall seconds are kept in `state.json` too.
        keep_last: also keep the weights training ended with, in `checkpoints/last.weights.h5`
            (`FitResult.last_weights`), where they differ from the best checkpoint's: a recipe
            may choose them instead (`Recipe.choose_weights`).

    Returns:
        A `FitResult`. The model holds the best weights.

    Raises:
        ValueError: if the loss became NaN before any epoch was checkpointed.
    """
    best = os.path.join(run_dir, "checkpoints", "best.weights.h5")
    os.makedirs(os.path.dirname(best), exist_ok=True)
    run = RunDirectory(run_dir)
    state = run.state()
    if state.get("fit_finished") and os.path.exists(best):
        # Interrupted after fitting (evaluation, plots): the fit is not run again.
        model.load_weights(best)
        last = os.path.join(run_dir, "checkpoints", LAST_WEIGHTS)
        return FitResult(
            float(state.get("train_seconds", 0.0)),
            int(state.get("epochs_run", 0)),
            bool(state.get("stopped_on_nan")),
            best,
            int(state.get("steps", 0)),
            last_weights=last if keep_last and os.path.exists(last) else None,
        )
    history_csv, logs = os.path.join(run_dir, "history.csv"), os.path.join(run_dir, "logs")
    accounting = run_callbacks.RunAccounting(run_dir, clock=clock)
    early = None
    if early_stopping_patience is not None:
        early = keras.callbacks.EarlyStopping(monitor="val_loss", patience=early_stopping_patience)
    converged = run_callbacks.SequencesConverged()  # a no-op without the sequence accuracy
    callbacks = [
        keras.callbacks.TerminateOnNaN(),
        # Resuming keeps the best validation loss so far as the bar to beat.
        run_callbacks.BestWeights(best, "val_loss", best_logged(history_csv, "val_loss")),
        run_callbacks.ResumableCSVLogger(history_csv),
        accounting,  # before the backup, which is deleted when fit ends
        run_callbacks.AtomicBackupAndRestore(os.path.join(run_dir, "backup")),
        *([early] if early is not None else []),
        converged,
        *([keras.callbacks.TensorBoard(logs, write_graph=False)] if tensorboard else []),
        *(callbacks or []),
    ]
    try:
        history = model.fit(
            train_ds,
            validation_data=val_ds,
            epochs=epochs,
            callbacks=callbacks,
            shuffle=False,  # the tf.data pipelines shuffle themselves
            verbose=(1 if sys.stdout.isatty() else 2)
            if verbose is None
            else verbose,  # bar or lines
        )
    except BaseException:  # interrupted (Ctrl-C, SIGTERM) or failed: the seconds still count
        accounting.save()
        raise
    steps = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    run.update_state(steps=steps)
    losses = history.history.get("loss", [])
    if diverged := any(not math.isfinite(v) for v in losses) or accounting.stopped_on_nan:
        if not os.path.exists(best):
            raise UserInputError(
                "training diverged (NaN loss) before any checkpoint was saved; lower the "
                "learning rate (raise --warmup-steps) or try --mixed-precision none."
            )
        message = "training stopped: the loss became NaN. Keeping the last good checkpoint %s."
        logger.warning(message, best)
    last = None
    if keep_last and not diverged and os.path.exists(best):
        last = os.path.join(run_dir, "checkpoints", LAST_WEIGHTS)
        model.save_weights(last)
    if os.path.exists(best):
        model.load_weights(best)
        if last is not None and _same_weights(model, last):
            os.remove(last)  # the last epoch was the best
            last = None
    reason = None
    if accounting.epochs_run < epochs and not diverged:
        reason = _stop_reason(early, converged, callbacks, early_stopping_patience)
        if reason is not None and not reason.startswith("the time budget"):
            rundir.progress_logger.info(
                "training stopped early after epoch %d: %s", accounting.epochs_run, reason
            )
    return FitResult(
        accounting.train_seconds, accounting.epochs_run, diverged, best, steps, reason, last
    )


LAST_WEIGHTS = "last.weights.h5"
"""Under `checkpoints/`: the weights a fit ended with (`fit_run(keep_last=True)`)."""


def _same_weights(model: keras.Model, path: str) -> bool:
    """Whether the weights file `path` holds `model`'s weights (the model is left as it was)."""
    import numpy as np

    held = model.get_weights()
    model.load_weights(path)
    same = all(np.array_equal(a, b) for a, b in zip(held, model.get_weights(), strict=True))
    model.set_weights(held)
    return same


def _stop_reason(early, converged, callbacks, patience: int) -> str | None:
    """Which callback ended `fit` before its last epoch, in words (None: none said so)."""
    if any(getattr(callback, "stopped", False) is True for callback in callbacks):
        return "the time budget was spent"
    if converged.converged:
        return "the validation sequence accuracy converged"
    if early is not None and early.stopped_epoch > 0:
        return f"val_loss did not improve for {patience} epochs (early stopping)"
    return None
