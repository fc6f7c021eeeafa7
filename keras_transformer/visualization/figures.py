"""Figures of a training run, each on its own `Figure` (never pyplot), saved as one PNG.

This module only draws: the attention weights `plot_attention` draws come from
`attention_maps` (a probe of the trained model)."""

import csv
import os
import textwrap

import numpy as np


def read_history(path: str | os.PathLike) -> dict[str, list[float]]:
    """Columns of a Keras `CSVLogger` file as lists of floats."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {key: [float(row[key]) for row in rows] for key in (rows[0] if rows else {})}


def figure(rows: int = 1, cols: int = 1, figsize=(6, 4), **kwargs):
    """A `Figure` and its axes (an array when `rows * cols > 1` or `squeeze=False`)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots(rows, cols, **kwargs)


def save(fig, path: str | os.PathLike, **layout) -> str:
    """Lays out `fig`, writes it to `path` as a PNG and returns the path."""
    fig.tight_layout(**layout)
    fig.savefig(path, dpi=100)
    return str(path)


def plot_history(history: dict[str, list[float]], path: str | os.PathLike) -> str:
    """Loss and accuracy (or masked token accuracy) per epoch, training against validation."""
    epochs = np.arange(1, len(history.get("loss", [])) + 1)
    accuracy = next((k for k in history if k.endswith("accuracy") and k[:4] != "val_"), "accuracy")
    fig, axes = figure(1, 2, figsize=(10, 4))
    for ax, metric in zip(axes, ("loss", accuracy), strict=True):
        for key, style in ((metric, "-"), (f"val_{metric}", "--")):
            if key in history:
                ax.plot(epochs, history[key], style, marker="o", label=key)
        ax.set(xlabel="epoch", title=metric)
        ax.grid(alpha=0.3)
        ax.legend()
    return save(fig, path)


def plot_schedule(
    schedule,
    steps: int,
    path: str | os.PathLike,
    title: str = "Learning-rate schedule (warm-up, then 1/sqrt(step))",
) -> str:
    """Learning rate against step of a `LearningRateSchedule` (any function of float32 steps)."""
    x = np.arange(max(int(steps), 1))
    fig, ax = figure()
    ax.plot(x, np.asarray(schedule(x.astype("float32"))))
    ax.set(xlabel="optimizer step", ylabel="learning rate", title=title)
    ax.grid(alpha=0.3)
    return save(fig, path)


def _label_inches(labels, fontsize: float) -> float:
    """About how long, in inches, the longest of `labels` is written at `fontsize` points."""
    longest = max((len(str(t)) for t in labels), default=1)
    return 0.62 * fontsize / 72 * longest + 0.15  # DejaVu Sans: ~0.6 em a character


def plot_attention(
    weights,
    query_tokens: list[str],
    key_tokens: list[str],
    path: str | os.PathLike,
    title: str = "attention",
    query_label: str | None = None,
    key_label: str | None = None,
    max_width: float = 7.0,
) -> str:
    """Heat maps of attention weights `(num_heads, q_len, kv_len)`, one per head.

    `query_label` and `key_label` name the rows and the columns under each map (for a
    decoder, "predicted token": row i is the position that predicts `query_tokens[i]`).
    The figure is sized from the tokens: every tick label lies inside it, the row labels are
    written once per row of maps, and the maps wrap to fit about `max_width` inches (a page's
    column), so the labels keep their size when the image is shown at the column's width.
    """
    weights = np.asarray(weights)[:, : len(query_tokens), : len(key_tokens)]
    fontsize, cell = 8, 0.3  # points; inches per token
    heads = weights.shape[0]
    row_labels = _label_inches(query_tokens, fontsize) + (0.25 if query_label else 0.0)
    map_width = cell * len(key_tokens) + 0.2
    fit = int((max_width - row_labels - 0.2) // map_width)
    cols = max(d for d in range(1, min(heads, 4) + 1) if heads % d == 0 and (d <= fit or d == 1))
    rows = heads // cols
    map_height = cell * len(query_tokens) + 0.35  # + the head's title
    col_labels = _label_inches(key_tokens, fontsize) + (0.25 if key_label else 0.0)
    size = (row_labels + cols * map_width + 0.2, 0.45 + rows * (map_height + col_labels))
    fig, axes = figure(rows, cols, figsize=size, squeeze=False)
    for h, ax in enumerate(axes.flat):
        ax.imshow(weights[h], vmin=0.0, vmax=float(weights.max()) or 1.0, cmap="viridis")
        ax.set_xticks(range(len(key_tokens)), key_tokens, rotation=90, fontsize=fontsize)
        first = h % cols == 0  # the rows' tokens and name once, left of each row of maps
        ax.set_yticks(range(len(query_tokens)), query_tokens if first else [], fontsize=fontsize)
        ax.set_title(f"head {h}", fontsize=fontsize + 1)
        ax.set_ylabel((query_label or "") if first else "", fontsize=fontsize)
        ax.set_xlabel(key_label or "", fontsize=fontsize)
    per_line = max(20, int(size[0] / (0.6 * (fontsize + 2) / 72)))  # characters in the width
    fig.suptitle(textwrap.fill(title, per_line), fontsize=fontsize + 2)
    return save(fig, path)
