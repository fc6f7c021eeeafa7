"""`kt.plots`: the figures of a training run, kept at this documented path.

They are drawn by `keras_transformer.visualization.figures` (each on its own `Figure`, never
pyplot); this module re-exports its names, so `kt.plots.plot_history(...)` and
`from keras_transformer.plots import read_history` keep working.
"""

from keras_transformer.visualization.figures import (
    figure,
    plot_attention,
    plot_history,
    plot_schedule,
    read_history,
    save,
)

__all__ = ["figure", "plot_attention", "plot_history", "plot_schedule", "read_history", "save"]
