"""Figures of a training run, each on its own `Figure` (never pyplot), saved as one PNG.

This module only draws: the attention weights `plot_attention` draws come from
`attention_maps` (a probe of the trained model)."""

import csv
import os

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


def plot_attention(
    weights,
    query_tokens: list[str],
    key_tokens: list[str],
    path: str | os.PathLike,
    title: str = "attention",
    query_label: str | None = None,
    key_label: str | None = None,
) -> str:
    """Heat maps of attention weights `(num_heads, q_len, kv_len)`, one per head.

    `query_label` and `key_label` name the rows and the columns under each map (for a
    decoder, "predicted token": row i is the position that predicts `query_tokens[i]`).
    """
    weights = np.asarray(weights)[:, : len(query_tokens), : len(key_tokens)]
    heads, cols = weights.shape[0], min(weights.shape[0], 4)
    rows = -(-heads // cols)  # ceil
    size = (3 + 0.35 * len(key_tokens) * cols, 1 + 0.35 * len(query_tokens) * rows)
    fig, axes = figure(rows, cols, figsize=size, squeeze=False)
    for ax in axes.flat[heads:]:
        ax.axis("off")
    for h, ax in enumerate(axes.flat[:heads]):
        ax.imshow(weights[h], vmin=0.0, vmax=float(weights.max()) or 1.0, cmap="viridis")
        ax.set_xticks(range(len(key_tokens)), key_tokens, rotation=90, fontsize=7)
        ax.set_yticks(range(len(query_tokens)), query_tokens, fontsize=7)
        ax.set_title(f"head {h}", fontsize=8)
        ax.set_ylabel(query_label or "", fontsize=7)
        ax.set_xlabel(key_label or "", fontsize=7)
    fig.suptitle(title, fontsize=9)
    return save(fig, path, rect=(0, 0, 1, 0.96))
