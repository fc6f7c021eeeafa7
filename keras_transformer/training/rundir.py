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


def plot_run_curves(run_dir: str, steps: int, learning_rate: Any) -> None:
    """`plots/history.png` and `plots/learning_rate.png` over the `steps` taken; the rate is the
    run's (`RunPlan.learning_rate`): a `BudgetSchedule`, a constant or the paper's
    `TransformerSchedule` (drawn over at least two warm-ups)."""
    history = plots.read_history(os.path.join(run_dir, "history.csv"))
    plots.plot_history(history, os.path.join(run_dir, "plots", "history.png"))
    path = os.path.join(run_dir, "plots", "learning_rate.png")
    if isinstance(learning_rate, int | float):
        title = f"constant learning rate {learning_rate}"
        constant = float(learning_rate)
        plots.plot_schedule(lambda x: [constant] * len(x), max(steps, 1), path, title=title)
    elif isinstance(learning_rate, TransformerSchedule):
        warmup = learning_rate.warmup_steps
        plots.plot_schedule(learning_rate, max(steps, warmup * 2), path)
    else:
        title = "warm-up, then cosine decay"
        if steps < learning_rate.total_steps:
            title += f" (training ended at step {steps})"
        plots.plot_schedule(learning_rate, max(steps, learning_rate.total_steps), path, title=title)
