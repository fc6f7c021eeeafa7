"""What a training run shows and draws beside its run directory (`runs.RunDirectory` writes
and reads the files): the progress lines, and the curves of `plots/`."""

import logging
import os
from typing import Any

from keras_transformer.training.schedule import TransformerSchedule
from keras_transformer.visualization import figures as plots

logger = logging.getLogger(__name__)
progress_logger = logging.getLogger("keras_transformer.progress")
"""Lines a run shows by default (INFO, even without `-v`): per-epoch progress of a budget run,
that a run resumed, why training stopped early."""
progress_logger.setLevel(logging.INFO)

__all__ = ["plot_run_curves", "progress_logger"]


def plot_run_curves(run_dir: str, config: Any, steps: int, schedule: Any = None) -> None:
    """`plots/history.png` and `plots/learning_rate.png` over the `steps` taken; the rate is
    `schedule` (the run's `learning_rate`: a `BudgetSchedule`, a constant or the paper's
    `TransformerSchedule`), else `config.learning_rate`, else the paper's schedule (drawn over at
    least two warm-ups)."""
    history = plots.read_history(os.path.join(run_dir, "history.csv"))
    plots.plot_history(history, os.path.join(run_dir, "plots", "history.png"))
    path = os.path.join(run_dir, "plots", "learning_rate.png")
    rate = getattr(config, "learning_rate", None)
    if isinstance(schedule, int | float):  # a constant rate
        rate, schedule = schedule, None
    elif isinstance(schedule, TransformerSchedule):  # the paper's: drawn below
        schedule = None
    if schedule is not None:
        title = "warm-up, then cosine decay"
        if steps < schedule.total_steps:
            title += f" (training ended at step {steps})"
        plots.plot_schedule(schedule, max(steps, schedule.total_steps), path, title=title)
    elif rate is None:
        schedule = TransformerSchedule(config.d_model, config.warmup_steps)
        plots.plot_schedule(schedule, max(steps, config.warmup_steps * 2), path)
    else:
        title = f"constant learning rate {rate}"
        plots.plot_schedule(lambda x: [rate] * len(x), max(steps, 1), path, title=title)
