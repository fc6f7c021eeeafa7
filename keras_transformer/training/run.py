"""One training run, end to end: `train` runs the shared stages around a recipe.

Every run, whatever it trains (a translator, a classifier, a language model, a dual encoder, a
pre-trained encoder: `recipes`), passes through the same stages:

1. open the run directory (`runs.RunDirectory`: may it be written, is a run to resume);
2. devices (`devices.set_up_devices`: strategy, batch per replica, precision, XLA);
3. data (`recipes.load_data`) and what `--init-from` names (`init_from.load_init`);
4. the plan (`plan.resolve_plan`, through `recipes.prepare_recipe`): sizes, vocabularies,
   `max_length`, batches and learning rate, decided once into a frozen `RunPlan` that the
   recipe, compile, fit, the evaluation and the plots read;
5. the run directory written (tokenizers, `state.json`);
6. build and compile (inside the strategy's scope), `config.json`;
7. fit (`fitting.fit_run`; a `--time-budget` adds `TimeBudget`);
8. evaluate and write (`model.keras`, `metrics.json` last, plots).
"""

import logging
import math
import os
import shutil

import keras

from keras_transformer.choices import PRECISIONS
from keras_transformer.errors import UserInputError
from keras_transformer.inference.decoding import save_decoding
from keras_transformer.runs import RunDirectory, requested_settings
from keras_transformer.training.callbacks import TimeBudget
from keras_transformer.training.config import BUDGET_EPOCHS, TrainConfig
from keras_transformer.training.devices import prepare_for_strategy, set_up_devices, write_dir
from keras_transformer.training.fitting import compile_model, fit_run
from keras_transformer.training.init_from import TranslationRun, load_init
from keras_transformer.training.recipes import load_data, prepare_recipe, recipe_name
from keras_transformer.training.rundir import plot_run_curves, progress_logger
from keras_transformer.training.wallclock import FINISH_SECONDS, RunClock

logger = logging.getLogger(__name__)

__all__ = ["train"]


def train(config: TrainConfig, *, started: float | None = None) -> dict:
    """Run one training job and write its run directory; returns `metrics.json`.

    The stages are listed in the module docstring. `config` is only read: what the run decides
    from it, the data and the devices is its `RunPlan` (step 4). The run directory is checked first (a file in the way, a finished run, an
    unfinished run with other settings), before any data work; `--overwrite` clears it once the
    data is ready, unless it holds an unfinished run with the same settings, which is resumed
    (`RunDirectory.overwrites`).

    `config.time_budget` is the wall time of the whole job, counted from `started`
    (`time.time()`; the command line passes its process's start, else now) plus the seconds of
    the earlier parts of a resumed run: setup, training and evaluation (`_budget_callback`)."""
    # 1. The run directory: may it be written, is there a run to resume (and its budget left)?
    run = RunDirectory(config.run_dir)
    run.check_writable(config)
    clears = run.overwrites(config)
    requested = requested_settings(config)  # before sizes are planned: what a resume must match
    earlier = {} if clears else run.state()  # an unfinished run's totals
    clock = RunClock(
        config.time_budget, started=started, prior_seconds=earlier.get("wall_seconds", 0.0)
    )
    if earlier and config.time_budget is not None and clock.left() <= 0:
        raise UserInputError(
            f"the unfinished run in {config.run_dir} has used its whole --time-budget "
            f"{_duration(config.time_budget)} ({clock.prior_seconds:.0f} s over "
            f"{earlier.get('parts', 1)} part(s)); rerun with a larger --time-budget and "
            "--overwrite."
        )
    counted = [run if earlier else None]  # the run directory whose state.json counts our seconds
    try:
        return _train(config, requested, run, clock, clears, earlier, counted)
    except BaseException as error:  # interrupted or failed: this process's seconds still count
        if counted[0] is not None and os.path.isdir(counted[0].path):
            counted[0].update_state(wall_seconds=round(clock.used(), 3))
        if isinstance(error, KeyboardInterrupt):  # the command's one line names the stage
            error.stage = clock.stage
        raise


def _train(
    config: TrainConfig,
    requested: dict,
    run: RunDirectory,
    clock: RunClock,
    clears: bool,
    earlier: dict,
    counted,
) -> dict:
    # 2. Devices.
    clock.stage = "while setting up the devices"
    devices = set_up_devices(config)  # first TensorFlow call: devices are fixed at start-up
    # 3. Data, and what --init-from names: read and checked before any file is made.
    clock.stage = "while loading the data"
    progress_logger.info("loading the data (--task %s)", config.task)  # shown by default
    kind = recipe_name(config)
    task = load_data(config)
    init = load_init(config, kind)
    # 4. The plan, decided once; vocabularies and batches in memory, so that bad settings fail
    # before any file.
    keras.utils.set_random_seed(config.seed)
    logger.info(
        "precision %s, XLA compilation %s",
        PRECISIONS[devices.precision],
        "on" if devices.xla else "off",
    )
    clock.stage = "while learning the vocabularies"
    progress_logger.info("learning the vocabularies from %d training examples", len(task.train))
    recipe = prepare_recipe(config, task, init, devices, clock.left)
    plan = recipe.plan
    pieces = ", ".join(f"{name} {tok.vocab_size}" for name, tok in recipe.tokenizers.items())
    logger.info("vocabularies (WordPiece pieces): %s", pieces)
    # 5. The run directory written: the chief writes it, other workers a temporary one.
    if clears:
        run.clear()
    written = RunDirectory(write_dir(config.run_dir, devices.strategy)).make()
    counted[0] = written
    parts = int(earlier.get("parts", 1)) + 1 if earlier else 1
    if earlier:
        _log_resume(config, written.path, earlier, clock)
    else:
        logger.info("run directory %s", written.path)
    written.update_state(settings=requested, parts=parts)
    for name, tokenizer in recipe.tokenizers.items():
        tokenizer.save(written.file("tokenizers", name))
    # 6. Build and compile; config.json.
    clock.stage = "while building the model"
    with devices.strategy.scope():  # variables mirrored on every replica
        model = recipe.build()
        compile_model(model, plan, **recipe.compile_options())
    prepare_for_strategy(model, recipe.train_ds.element_spec)
    budget, callbacks = None, []
    if config.time_budget is not None:  # one line per epoch: time used and left, not "Epoch 3/1000"
        clock.stage = "while timing the evaluation (for the time budget)"
        budget = _budget_callback(plan, clock, recipe, model, earlier.get("fit_finished"))
        callbacks.append(budget)
    limit = (
        f"for {budget.training_seconds():.0f} s of the {config.time_budget:g} s budget"
        if budget is not None
        else f"for up to {plan.epochs} epochs"
    )
    progress_logger.info("model: %s parameters; training %s", f"{model.count_params():,}", limit)
    written.write_config(
        config,
        **plan.recorded,  # the sizes, warm-up, precision and XLA the plan chose
        # The task's own labels: --source-lang/--target-lang apply to --task numbers only.
        source_lang=task.source_lang,
        target_lang=task.target_lang,
        **recipe.config_extra(),
        **({"init_from": init.record} if isinstance(init, TranslationRun) else {}),
    )
    # 7. Fit.
    setup_seconds = clock.elapsed()
    fit = fit_run(
        model,
        recipe.train_ds,
        recipe.val_ds,
        run_dir=written.path,
        epochs=plan.epochs,
        early_stopping_patience=config.early_stopping_patience,
        callbacks=callbacks,
        verbose=0 if callbacks else None,
        clock=clock,
        keep_last=recipe.KEEPS_LAST,
    )
    if budget is not None:
        _report_budget_end(
            config, budget, fit, setup_seconds, plan.epoch_seconds, clock.prior_seconds
        )
    # 8. Evaluate and write: the weights kept, model.keras, plots, metrics.json last.
    evaluation_started = clock.elapsed()
    clock.stage = recipe.EVALUATING
    chosen = recipe.choose_weights(model, fit)
    model.save(written.file("model.keras"))
    progress_logger.info(
        "training done (%d epochs in all); evaluating on the test split", fit.epochs_run
    )
    metrics = {
        "architecture": config.architecture,
        **recipe.evaluate(model, fit),
        **chosen,
        **fit.metrics(model),
        "num_test": len(task.test),
    }
    if (metrics.get("decoding") or {}).get("chosen_on"):  # what `translate` searches with
        save_decoding(written.path, metrics["decoding"])
    clock.stage = "while drawing the plots (training is done)"
    plot_run_curves(written.path, fit.steps, plan.learning_rate)
    recipe.plot(model, written.file("plots"))
    metrics.update(
        setup_seconds=round(setup_seconds, 2),
        evaluation_seconds=round(clock.elapsed() - evaluation_started, 2),
        wall_seconds=round(clock.used(), 2),  # every part of the run, as `time` counts them
        run_parts=parts,
    )
    if config.time_budget is not None:
        metrics["time_budget_seconds"] = config.time_budget
        metrics["stopped_by_time_budget"] = budget is not None and budget.stopped
    # metrics.json marks a finished run: written last, so a run stopped before it is resumed.
    written.write_json("metrics.json", metrics)
    written.finish()
    logger.info("wrote %s", os.path.join(config.run_dir, "metrics.json"))
    clock.stage = "done"
    keras.mixed_precision.set_global_policy("float32")
    if written.path != config.run_dir:  # a non-chief worker: its files were only a copy
        shutil.rmtree(written.path, ignore_errors=True)
    return metrics


def _log_resume(config: TrainConfig, run_dir: str, earlier: dict, clock: RunClock) -> None:
    """One line, shown by default: the run resumes, after what, with how much budget left."""
    epochs = int(earlier.get("epochs_run", 0))
    done = f"after epoch {epochs}" if epochs else "(no epoch had finished)"
    text = f"resuming the unfinished run in {run_dir} {done}"
    if config.time_budget is not None:
        text += (
            f"; of the {config.time_budget:g} s budget, the earlier part(s) used "
            f"{clock.prior_seconds:.0f} s and this one's setup {clock.elapsed():.0f} s so far: "
            f"{max(0.0, clock.left()):.0f} s are left"
        )
    if config.overwrite:
        text += (
            " (--overwrite replaces a finished run or one started with other settings; "
            f"delete {run_dir} to start this one again)"
        )
    progress_logger.info("%s", text)


def _budget_callback(
    plan, clock: RunClock, recipe, model, fit_finished: bool = False
) -> TimeBudget:
    """The `TimeBudget` of a run whose `--time-budget` is the whole command's wall time.

    Kept for after training: the evaluation's decoding, measured on a chunk of the test
    sentences (`recipe.prepare_evaluation`, which also compiles the search the evaluation uses;
    timed again near the budget's end, `recipe.remeasure_evaluation`),
    `FINISH_SECONDS` of saving and plots, and forward passes over the validation batches (the
    pass after the stop) and the test batches, timed by `TimeBudget` itself.

    Raises:
        UserInputError: the budget is spent before training could start, naming what took it
            and the budget to ask for instead.
    """
    decoding, update_reserve = 0.0, None
    if not fit_finished:  # else the fit is not rerun
        decoding = recipe.prepare_evaluation(model)
        if recipe.REMEASURES:
            update_reserve = lambda: recipe.remeasure_evaluation(model) + FINISH_SECONDS  # noqa: E731
    validation_batches = int(recipe.val_ds.cardinality())
    budget_seconds = plan.time_budget
    budget = TimeBudget(
        budget_seconds,
        schedule=plan.schedule,
        progress=True,
        used_seconds=min(clock.used(), budget_seconds),
        reserve_seconds=decoding + FINISH_SECONDS,
        validation_batches=max(0, validation_batches) + recipe.test_batches,
        update_reserve=update_reserve,
    )
    if budget.training_seconds() <= 0:
        setup = clock.elapsed()
        earlier = f" and earlier parts of the run {clock.prior_seconds:.0f} s" * bool(
            clock.prior_seconds
        )
        suggested = _suggested(
            clock.prior_seconds + setup, plan.epoch_seconds, budget.reserve_seconds
        )
        raise UserInputError(
            f"--time-budget {_duration(budget_seconds)} was used up before training could "
            f"start: setup took {_seconds(setup)}{earlier}, and evaluating needs about "
            f"{_seconds(budget.reserve_seconds)}; rerun with --time-budget {suggested} "
            "or more and --overwrite."
        )
    return budget


def _report_budget_end(
    config: TrainConfig,
    budget: TimeBudget,
    fit,
    setup_seconds: float,
    epoch_seconds: float | None,
    prior_seconds: float = 0.0,
) -> None:
    """One warning when the budget ended inside the run's first epoch (a barely trained model),
    with the budget to ask for (`prior_seconds`: spent by earlier parts of a resumed run); one
    line why training stopped when `--epochs` was also given."""
    if budget.stopped_in_epoch == 0:
        steps = int((budget.params or {}).get("steps") or 0)
        if budget.batch_seconds is not None and steps:
            epoch_seconds = budget.batch_seconds * steps  # measured, not planned
        kept = budget.reserve_seconds + budget.validation_seconds()
        one_epoch = f" and one epoch about {_seconds(epoch_seconds)}" if epoch_seconds else ""
        logger.warning(
            "--time-budget %s ended during the first epoch (%d of %d batches): the model is "
            "barely trained. Setup took %s, evaluating needs about %s%s: rerun with "
            "--time-budget %s or more and --overwrite.",
            _duration(config.time_budget),
            budget.stopped_after_batches,
            steps,
            _seconds(setup_seconds),
            _seconds(kept),
            one_epoch,
            _suggested(prior_seconds + setup_seconds, epoch_seconds, kept),
        )
    elif budget.stopped and config.epochs != BUDGET_EPOCHS:
        progress_logger.info(
            "training stopped after epoch %d of %d: the %s time budget was spent",
            fit.epochs_run,
            config.epochs,
            _duration(config.time_budget),
        )


def _suggested(setup: float, epoch: float | None, kept: float) -> str:
    """A budget for three epochs after this setup (twice the setup without an epoch estimate)."""
    training = 3 * epoch if epoch is not None else max(setup, 30.0)
    return _duration(_round_up(setup + training + kept))


def _seconds(seconds: float) -> str:
    """`12 s`, `0.4 s`: seconds as the budget lines show them."""
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"


def _round_up(seconds: float) -> float:
    """Seconds rounded up to a budget one would type: 10 s under 2 minutes, then minutes."""
    if seconds <= 120:
        return 10.0 * math.ceil(seconds / 10.0)
    return 60.0 * math.ceil(seconds / 60.0)


def _duration(seconds: float) -> str:
    """`90s`, `2m`, `1.5h`: a duration as `--time-budget` takes it."""
    if seconds >= 3600 and seconds % 360 == 0:
        return f"{seconds / 3600:g}h"
    if seconds >= 120 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"
