"""One training run, end to end: the shared steps around one architecture's recipe.

`train(TrainConfig(...))` is what `keras-transformer train` calls, for every
`--architecture`: it reads the task, asks `architectures.RECIPES` for the
recipe (tokenizers, batches, model, loss, evaluation, extra plots), compiles
and fits through `fitting.fit_run`, and writes a run directory:

    model.keras                  the trained model (best validation loss)
    tokenizers/source/vocab.txt  WordPiece vocabularies
    tokenizers/target/vocab.txt
    config.json                  every setting of the run
    history.csv                  one row per epoch (Keras CSVLogger)
    metrics.json                 test quality, speed, parameters
    plots/*.png                  curves, learning rate, cross-attention
    checkpoints/                 best weights; backup/ for resuming
    logs/                        TensorBoard

With `strategy` other than "none" the run goes through `tf.distribute` (see
`keras_transformer.training.distribute` and docs/scaling.md): the model is built
and compiled inside `strategy.scope()`, `batch_size` is the global batch split
across the replicas, and under multi-worker training only the chief writes the
run directory (the other workers write to `workertemp_<id>/` and delete it).
"""

from __future__ import annotations

import logging
import os
import shutil

import keras

from keras_transformer import data
from keras_transformer.training import distribute
from keras_transformer.training.architectures import RECIPES, recipe_name, with_known_length
from keras_transformer.training.budget import TimeBudget, planned_schedule
from keras_transformer.training.callbacks import kill_point
from keras_transformer.training.config import PRECISIONS, TrainConfig, resolve_precision, use_xla
from keras_transformer.training.fitting import compile_model, fit_run
from keras_transformer.training.pretraining import load_pretrained
from keras_transformer.training.rundir import (
    check_not_finished,
    check_splits,
    make_run_dir,
    plot_run_curves,
    write_config,
    write_json,
)

logger = logging.getLogger(__name__)

__all__ = ["TrainConfig", "resolve_precision", "train", "use_xla", "with_known_length"]


def train(config: TrainConfig) -> dict:
    """Run one training job and write its run directory; returns `metrics.json`."""
    if not config.overwrite:  # a finished run is refused at once; --overwrite clears it later
        check_not_finished(config.run_dir, overwrite=False)
    # First TensorFlow call: logical devices and collectives are fixed at start-up.
    strategy = distribute.make_strategy(config.strategy, config.cpu_devices)
    per_replica_batch = distribute.check_global_batch(config.batch_size, strategy)
    logger.info(
        "global batch %d = %d replica(s) x %d",
        config.batch_size,
        strategy.num_replicas_in_sync,
        per_replica_batch,
    )
    # The data (and a pre-trained encoder) are read and checked before any file is made;
    # the chief writes the run directory, other workers a temporary one.
    task = data.load_task(config.task, **config.task_options())
    check_splits(task)
    sized = size_from_data(config, task)
    init = load_pretrained(config.init_from) if config.init_from else None
    keras.utils.set_random_seed(config.seed)
    precision = resolve_precision(config.mixed_precision)
    keras.mixed_precision.set_global_policy(PRECISIONS[precision])
    xla = use_xla(config.jit_compile)
    logger.info(
        "task %s: %d train, %d validation, %d test examples",
        task.name,
        len(task.train),
        len(task.validation),
        len(task.test),
    )

    # The recipe learns the vocabularies and builds the batches in memory, so bad
    # settings (a tiny --vocab-size, ...) fail before the run directory is touched.
    recipe = RECIPES[recipe_name(config)](config, task, init)
    check_not_finished(config.run_dir, config.overwrite)
    run_dir = make_run_dir(distribute.write_dir(config.run_dir, strategy))
    for name, tokenizer in recipe.tokenizers.items():
        tokenizer.save(os.path.join(run_dir, "tokenizers", name))
    schedule, callbacks = None, []
    if config.planned_schedule and recipe.learning_rate is None:
        schedule = planned_schedule(config, *_pace_inputs(config, task, recipe.train_ds))
        if config.time_budget is not None:
            callbacks.append(TimeBudget(config.time_budget, schedule=schedule))
    with strategy.scope():  # variables mirrored on every replica
        model = recipe.build()
        optimizer = compile_model(
            model, config, xla, learning_rate=recipe.learning_rate or schedule,
            loss=recipe.loss, metrics=recipe.metrics,
        )  # fmt: skip
    distribute.prepare_for_strategy(model, recipe.train_ds.element_spec)
    write_config(
        config,
        run_dir,
        jit_compile_resolved=xla,
        mixed_precision_resolved=precision,
        num_replicas=strategy.num_replicas_in_sync,
        sized_from_data=sized,
        planned_steps=None if schedule is None else schedule.total_steps,
        **recipe.config_extra,
    )
    fit = fit_run(
        model,
        recipe.train_ds,
        recipe.val_ds,
        run_dir=run_dir,
        epochs=config.epochs,
        early_stopping_patience=config.early_stopping_patience,
        callbacks=callbacks,
    )
    model.save(os.path.join(run_dir, "model.keras"))
    kill_point("before_plots")  # test hook (callbacks.kill_point): no-op unless set
    metrics = {
        "architecture": config.architecture,
        **recipe.evaluate(model, fit),
        **fit.metrics(model),
        "num_test": len(task.test),
    }
    if config.time_budget is not None:
        metrics["time_budget_seconds"] = config.time_budget
        metrics["stopped_by_time_budget"] = callbacks[0].stopped_step is not None
    plot_run_curves(
        run_dir,
        config,
        int(optimizer.iterations.numpy()),
        schedule=recipe.learning_rate or schedule,
    )
    if recipe.plot is not None:
        recipe.plot(model, os.path.join(run_dir, "plots"))
    # metrics.json marks a finished run (check_not_finished): written last, so a run
    # stopped before it (even between the plots) is resumed, never taken as done.
    kill_point("before_metrics")
    write_json(os.path.join(run_dir, "metrics.json"), metrics)
    keras.mixed_precision.set_global_policy("float32")
    if run_dir != config.run_dir:  # a non-chief worker: its files were only a copy
        shutil.rmtree(run_dir, ignore_errors=True)
    return metrics


def size_from_data(config: TrainConfig, task) -> dict:
    """Fills the sizes `config` leaves to the data (--task tsv); returns those chosen.

    `data.sizing.plan_training` on the training pairs (and the time budget)
    picks the vocabulary, model, length and epochs that were not set.
    """
    if not config.sized_by_data:
        return {}
    from keras_transformer.data import sizing

    plan = sizing.plan_training(
        sizing.corpus_stats(task.train),
        budget_seconds=config.time_budget,
        batch_size=config.batch_size,
    )
    chosen = config.apply_plan(plan)
    logger.info(
        "sized from the %d training pairs: %s",
        len(task.train),
        ", ".join(f"{name} {value}" for name, value in chosen.items()),
    )
    return chosen


def _pace_inputs(config: TrainConfig, task, train_ds) -> tuple[int, float]:
    """Steps per epoch (the batches' count when tf.data knows it) and target tokens
    per batch (1.5 pieces per word, + [END])."""
    pairs = [pair for pair in task.train if isinstance(pair[1], str)]
    words = sum(len(target.split()) for _, target in pairs) / max(1, len(pairs))
    tokens = config.batch_size * min(config.max_length, 1.5 * words + 1)
    steps = int(train_ds.cardinality())
    return (steps if steps > 0 else max(1, len(task.train) // config.batch_size)), tokens
