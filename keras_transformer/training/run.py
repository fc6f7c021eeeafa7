"""One training run, end to end: `train` runs the shared steps around an architecture's recipe."""

import dataclasses
import logging
import os
import shutil

import keras

from keras_transformer import data
from keras_transformer.choices import PRECISIONS
from keras_transformer.data.sizing import PIECES_PER_WORD, corpus_stats
from keras_transformer.training import distribute, init_from, planning, rundir
from keras_transformer.training.callbacks import TimeBudget, kill_point, set_stage
from keras_transformer.training.config import BUDGET_EPOCHS, TrainConfig
from keras_transformer.training.devices import resolve_precision, use_xla
from keras_transformer.training.fitting import compile_model, fit_run
from keras_transformer.training.pretraining import load_pretrained
from keras_transformer.training.recipes import RECIPES, recipe_name
from keras_transformer.training.rundir import plot_run_curves
from keras_transformer.training.schedule import BudgetSchedule

logger = logging.getLogger(__name__)

MEASURED_LENGTH = ("translation", "prefix")
"""Recipes that choose `max_length` from their tokenized training pairs (`recipes.fit_length`)."""

__all__ = ["train"]


def train(config: TrainConfig) -> dict:
    """Run one training job and write its run directory; returns `metrics.json`.

    Sizes and a warm-up left to the data are planned here (`training.planning`) and applied to
    a copy of `config`: the caller's object is left as it was. The run directory is checked
    first (`rundir.check_run_dir`: a file in the way, a finished run, an unfinished run with
    other settings), before any data work; `--overwrite` clears it once the data is ready."""
    rundir.check_run_dir(config, config.run_dir)
    requested = rundir.requested_settings(config)
    set_stage("while setting up the devices")
    # First TensorFlow call: logical devices and collectives are fixed at start-up.
    strategy = distribute.make_strategy(config.strategy, config.cpu_devices)
    per_replica = distribute.check_global_batch(config.batch_size, strategy)
    replicas = strategy.num_replicas_in_sync
    logger.info("devices: %s; %s", _devices_text(), _batch_text(config, replicas, per_replica))
    # The data (and a pre-trained encoder) are read and checked before any file is made;
    # the chief writes the run directory, other workers a temporary one.
    set_stage("while loading the data")
    kill_point("loading_data")  # test hook (callbacks.kill_point): no-op unless set
    task = data.load_task(config.task, **config.task_options())
    rundir.check_splits(task)
    init, init_record = None, {}
    if config.init_from and recipe_name(config) in MEASURED_LENGTH:  # continue a translator
        init = init_from.load_run(config)
        config = dataclasses.replace(config, **init_from.inherited_sizes(config, init))
        init_record = {"init_from": init.record}
    sized = size_from_data(config, task)
    config = dataclasses.replace(config, **sized)  # the plan, applied in the open
    if config.init_from and init is None:
        init = load_pretrained(config.init_from)
    keras.utils.set_random_seed(config.seed)
    precision = resolve_precision(config.mixed_precision)
    keras.mixed_precision.set_global_policy(PRECISIONS[precision])
    xla = use_xla(config.jit_compile)
    logger.info("precision %s, XLA compilation %s", PRECISIONS[precision], "on" if xla else "off")
    logger.info(
        "task %s: %d train, %d validation, %d test examples",
        task.name,
        len(task.train),
        len(task.validation),
        len(task.test),
    )
    # The recipe learns the vocabularies and batches in memory: bad settings fail before any file.
    set_stage("while learning the vocabularies")
    recipe = RECIPES[recipe_name(config)](config, task, init)
    if recipe.sizes:  # max_length from the measured pieces, the vocabulary size learnt
        logger.info("sized from the tokenized training pairs: %s", recipe.sizes)
        config, sized = dataclasses.replace(config, **recipe.sizes), {**sized, **recipe.sizes}
    pieces = ", ".join(f"{name} {tok.vocab_size}" for name, tok in recipe.tokenizers.items())
    logger.info("vocabularies (WordPiece pieces): %s", pieces)
    if config.overwrite:
        rundir.clear_run(config.run_dir)
    resumed = rundir.read_state(config.run_dir).get("epochs_run", 0)
    run_dir = rundir.make_run_dir(distribute.write_dir(config.run_dir, strategy))
    if resumed:
        logger.info("run directory %s: resuming after epoch %d", run_dir, resumed)
    else:
        logger.info("run directory %s", run_dir)
    rundir.update_state(run_dir, settings=requested)
    for name, tokenizer in recipe.tokenizers.items():
        tokenizer.save(os.path.join(run_dir, "tokenizers", name))
    schedule, callbacks = None, []
    if config.planned_schedule and recipe.learning_rate is None:
        pace = _pace_inputs(config, task, recipe.train_ds, recipe.config_extra)
        plan = planning.plan_schedule(config, *pace)
        config = dataclasses.replace(config, warmup_steps=plan.warmup_steps)  # to config.json
        schedule = BudgetSchedule(*plan)
    if config.time_budget is not None:  # one line per epoch: time used and left, not "Epoch 3/1000"
        callbacks.append(TimeBudget(config.time_budget, schedule=schedule, progress=True))
    set_stage("while building the model")
    kill_point("building_model")
    with strategy.scope():  # variables mirrored on every replica
        model = recipe.build()
        compile_model(
            model,
            config,
            xla,
            loss=recipe.loss,
            metrics=recipe.metrics,
            learning_rate=recipe.learning_rate or schedule,
        )
    distribute.prepare_for_strategy(model, recipe.train_ds.element_spec)
    limit = (
        f"for {config.time_budget:g} s"
        if config.time_budget is not None
        else f"for up to {config.epochs} epochs"
    )
    logger.info("model: %s parameters; training %s", f"{model.count_params():,}", limit)
    rundir.write_config(
        config,
        run_dir,
        jit_compile_resolved=xla,
        mixed_precision_resolved=precision,
        num_replicas=replicas,
        # The task's own labels: --source-lang/--target-lang apply to --task numbers only.
        source_lang=task.source_lang,
        target_lang=task.target_lang,
        sized_from_data=_recorded(sized, config),
        planned_steps=None if schedule is None else schedule.total_steps,
        **recipe.config_extra,
        **_budget_epochs(config),
        **init_record,
    )
    fit = fit_run(
        model,
        recipe.train_ds,
        recipe.val_ds,
        run_dir=run_dir,
        epochs=config.epochs,
        early_stopping_patience=config.early_stopping_patience,
        callbacks=callbacks,
        verbose=0 if callbacks else None,
    )
    set_stage("while saving and evaluating the model (training is done)")
    model.save(os.path.join(run_dir, "model.keras"))
    kill_point("before_plots")  # test hook (callbacks.kill_point): no-op unless set
    logger.info("training done (%d epochs in all); evaluating on the test split", fit.epochs_run)
    metrics = {
        "architecture": config.architecture,
        **recipe.evaluate(model, fit),
        **fit.metrics(model),
        "num_test": len(task.test),
    }
    if config.time_budget is not None:
        metrics["time_budget_seconds"] = config.time_budget
        metrics["stopped_by_time_budget"] = callbacks[0].stopped
    set_stage("while drawing the plots (training is done)")
    plot_run_curves(run_dir, config, fit.steps, schedule=recipe.learning_rate or schedule)
    if recipe.plot is not None:
        recipe.plot(model, os.path.join(run_dir, "plots"))
    # metrics.json marks a finished run: written last, so a run stopped before it is resumed.
    kill_point("before_metrics")
    rundir.write_json(os.path.join(run_dir, "metrics.json"), metrics)
    rundir.finish_run(run_dir)
    logger.info("wrote %s", os.path.join(config.run_dir, "metrics.json"))
    set_stage("done")
    keras.mixed_precision.set_global_policy("float32")
    if run_dir != config.run_dir:  # a non-chief worker: its files were only a copy
        shutil.rmtree(run_dir, ignore_errors=True)
    return metrics


def _budget_epochs(config: TrainConfig) -> dict:
    """config.json entries of a budget run: no `"epochs": 1000` (the cap is not a plan)."""
    if config.time_budget is None or config.epochs != BUDGET_EPOCHS:
        return {}
    return {"epochs": None}


def _recorded(sized: dict, config: TrainConfig) -> dict:
    """The sizes chosen from the data, without a budget run's epoch cap."""
    return {k: v for k, v in sized.items() if k != "epochs" or not _budget_epochs(config)}


def _devices_text() -> str:
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    return f"{len(gpus)} GPU(s)" if gpus else "CPU only (no GPU found)"


def _batch_text(config: TrainConfig, replicas: int, per_replica: int) -> str:
    if replicas == 1:
        return f"batch size {config.batch_size}"
    return f"global batch {config.batch_size} = {replicas} replicas x {per_replica}"


def size_from_data(config: TrainConfig, task) -> dict:
    """The sizes `config` leaves to the data, planned from the corpus (`planning.plan_training`)."""
    if not config.sized_by_data:
        return {}
    stats, budget = corpus_stats(task.train), config.time_budget
    plan = planning.plan_training(stats, budget_seconds=budget, batch_size=config.batch_size)
    chosen = config.unset_sizes(plan)
    if recipe_name(config) in MEASURED_LENGTH:  # chosen from the learnt pieces instead
        chosen.pop("max_length", None)
    chosen_text = ", ".join(f"{name} {value}" for name, value in chosen.items())
    logger.info("sized from the %d training pairs: %s", len(task.train), chosen_text)
    return chosen


def _pace_inputs(config: TrainConfig, task, train_ds, extra: dict) -> tuple[int, float]:
    """Steps per epoch and target tokens per batch (measured pieces per word, else 1.5; + [END])."""
    pairs = [pair for pair in task.train if isinstance(pair[1], str)]
    words = sum(len(target.split()) for _, target in pairs) / max(1, len(pairs))
    per_word = extra.get("pieces_per_word", {}).get("target", PIECES_PER_WORD)
    tokens = config.batch_size * min(config.max_length, per_word * words + 1)
    steps = int(train_ds.cardinality())
    return (steps if steps > 0 else max(1, len(task.train) // config.batch_size)), tokens
