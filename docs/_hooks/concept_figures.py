"""The figures of the concepts page, drawn with matplotlib when the site is built.

`figures()` returns `{file name: SVG bytes}`; the docs hook publishes them under
`figures/`, where `docs/concepts.md` shows them. Run this file to write them to a
folder and look at them: `python docs/_hooks/concept_figures.py OUT_DIR`.
"""

from __future__ import annotations

import io
import pathlib
import sys

import numpy as np

SOURCE = ["ich", "bin", "ein", "Student", "[PAD]", "[PAD]"]
TARGET = ["[START]", "I", "am", "a", "student"]

_STYLE = {
    "svg.hashsalt": "keras_transformer",  # stable ids: the same figure gives the same bytes
    "svg.fonttype": "path",
    "font.size": 10,
}

_COLORS = {
    "attention": "#f6d6ad",
    "cross": "#f4b6c2",
    "norm": "#f3f3c4",
    "ffn": "#c6e2f5",
    "embed": "#d7ecd0",
    "output": "#e2d6f2",
    "edge": "#3f3f3f",
}


def _svg(figure) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    return buffer.getvalue()


def _box(axes, x, y, width, height, text, color, **kwargs):
    from matplotlib.patches import FancyBboxPatch

    axes.add_patch(
        FancyBboxPatch(
            (x - width / 2, y - height / 2),
            width,
            height,
            boxstyle="round,pad=0.02,rounding_size=0.08",
            facecolor=color,
            edgecolor=_COLORS["edge"],
            linewidth=1.0,
        )
    )
    axes.text(x, y, text, ha="center", va="center", **kwargs)


def _arrow(axes, start, end, **kwargs):
    axes.annotate(
        "",
        xy=end,
        xytext=start,
        arrowprops={"arrowstyle": "-|>", "color": _COLORS["edge"], "lw": 1.0, **kwargs},
    )


def encoder_decoder() -> bytes:
    """The encoder-decoder Transformer (figure 1 of the paper), bottom to top."""
    import matplotlib.pyplot as plt

    with plt.rc_context(_STYLE):
        figure, axes = plt.subplots(figsize=(7.2, 7.6))
        axes.set_xlim(-0.6, 10.6)
        axes.set_ylim(0, 11.4)
        axes.axis("off")
        width, height = 3.4, 0.55
        enc_x, dec_x = 2.5, 7.5

        # Inputs, embeddings and positions.
        axes.text(enc_x, 0.3, "source tokens\n" + " ".join(SOURCE[:4]), ha="center", va="center")
        axes.text(dec_x, 0.3, "target tokens, shifted right\n" + " ".join(TARGET[:4]), ha="center")
        for x in (enc_x, dec_x):
            _box(
                axes,
                x,
                1.45,
                width,
                0.62,
                "embedding × √d_model\n+ positional encoding",
                _COLORS["embed"],
                fontsize=9,
            )
            _arrow(axes, (x, 0.75), (x, 1.15))

        # Encoder layer: self-attention, Add & Norm, feed-forward, Add & Norm.
        enc_rows = [
            (2.7, "self-attention\n(global)", _COLORS["attention"]),
            (3.55, "Add & Norm", _COLORS["norm"]),
            (4.4, "feed-forward", _COLORS["ffn"]),
            (5.25, "Add & Norm", _COLORS["norm"]),
        ]
        dec_rows = [
            (2.7, "self-attention\n(causal)", _COLORS["attention"]),
            (3.55, "Add & Norm", _COLORS["norm"]),
            (4.65, "cross-attention\n(keys, values: encoder)", _COLORS["cross"]),
            (5.5, "Add & Norm", _COLORS["norm"]),
            (6.35, "feed-forward", _COLORS["ffn"]),
            (7.2, "Add & Norm", _COLORS["norm"]),
        ]
        from matplotlib.patches import FancyBboxPatch

        for x, rows, label, side in (
            (enc_x, enc_rows, "encoder\nlayer\n× N", -1),
            (dec_x, dec_rows, "decoder\nlayer\n× N", 1),
        ):
            top, bottom = rows[-1][0] + 0.55, rows[0][0] - 0.6
            axes.add_patch(
                FancyBboxPatch(
                    (x - 2.0, bottom),
                    4.0,
                    top - bottom,
                    boxstyle="round,pad=0.02,rounding_size=0.15",
                    facecolor="#f7f7f7",
                    edgecolor="#9a9a9a",
                    linestyle="--",
                )
            )
            axes.text(
                x + side * 2.1,
                (top + bottom) / 2,
                label,
                ha="right" if side < 0 else "left",
                va="center",
                fontweight="bold",
            )
            _arrow(axes, (x, 1.75), (x, rows[0][0] - 0.3))
            for (y0, _, _), (y1, _, _) in zip(rows[:-1], rows[1:], strict=True):
                _arrow(axes, (x, y0 + 0.3), (x, y1 - 0.3))
            for y, text, color in rows:
                _box(
                    axes, x, y, width, height if "\n" not in text else 0.62, text, color, fontsize=9
                )

        # Residual connections, drawn around each sublayer.
        for x, pairs in (
            (enc_x, [(2.7, 3.55), (4.4, 5.25)]),
            (dec_x, [(2.7, 3.55), (4.65, 5.5), (6.35, 7.2)]),
        ):
            for y0, y1 in pairs:
                axes.annotate(
                    "",
                    xy=(x - width / 2, y1),
                    xytext=(x - width / 2, y0 - 0.45),
                    arrowprops={
                        "arrowstyle": "-|>",
                        "color": "#7a7a7a",
                        "lw": 0.8,
                        "connectionstyle": "bar,fraction=-0.25",
                    },
                )

        # The encoder output feeds every decoder layer's cross-attention.
        axes.text(
            enc_x,
            7.0,
            "encoder output\n(batch, src_len, d_model)",
            ha="center",
            va="center",
            fontsize=9,
        )
        _arrow(axes, (enc_x, 5.85), (enc_x, 6.7))
        _arrow(
            axes, (enc_x + 1.3, 6.75), (dec_x - width / 2, 4.65), connectionstyle="arc3,rad=-0.25"
        )

        # Output head.
        _box(axes, dec_x, 8.45, width, height, "linear to the vocabulary", _COLORS["output"])
        _box(axes, dec_x, 9.35, width, height, "softmax", _COLORS["output"])
        _arrow(axes, (dec_x, 7.75), (dec_x, 8.15))
        _arrow(axes, (dec_x, 8.75), (dec_x, 9.05))
        axes.text(
            dec_x,
            10.25,
            "next-token probabilities\n" + " ".join(TARGET[1:]),
            ha="center",
            va="center",
        )
        _arrow(axes, (dec_x, 9.65), (dec_x, 9.95))
        return _svg(figure)


def attention_masks() -> bytes:
    """Which key each query may read: self, causal, padded self and cross attention."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    source_real = np.array([token != "[PAD]" for token in SOURCE])
    n_src, n_tgt = len(SOURCE), len(TARGET)
    panels = [
        (
            "encoder self-attention\n(global, padding masked)",
            SOURCE,
            SOURCE,
            np.broadcast_to(source_real[None, :], (n_src, n_src)),
        ),
        (
            "decoder self-attention\n(causal: key ≤ query)",
            TARGET,
            TARGET,
            np.tril(np.ones((n_tgt, n_tgt), dtype=bool)),
        ),
        (
            "cross-attention\n(decoder queries, encoder keys)",
            TARGET,
            SOURCE,
            np.broadcast_to(source_real[None, :], (n_tgt, n_src)),
        ),
    ]
    colormap = ListedColormap(["#e6e6e6", "#3b5bb5"])
    with plt.rc_context(_STYLE):
        figure, axes_row = plt.subplots(1, 3, figsize=(11.5, 4.3))
        for axes, (title, queries, keys, mask) in zip(axes_row, panels, strict=True):
            axes.imshow(mask, cmap=colormap, vmin=0, vmax=1)
            axes.set_title(title, fontsize=10)
            axes.set_xticks(range(len(keys)), keys, rotation=60, ha="right")
            axes.set_yticks(range(len(queries)), queries)
            axes.set_xlabel("key (may be read)")
            axes.set_ylabel("query (reads)")
            axes.set_xticks(np.arange(len(keys) + 1) - 0.5, minor=True)
            axes.set_yticks(np.arange(len(queries) + 1) - 0.5, minor=True)
            axes.grid(which="minor", color="white", linewidth=1.5)
            axes.tick_params(which="minor", length=0)
        figure.text(
            0.5,
            -0.04,
            "blue: the mask is True, the query attends to the key; grey: masked, "
            "its weight is 0 after the softmax",
            ha="center",
        )
        figure.tight_layout()
        return _svg(figure)


def attention_weights() -> bytes:
    """Attention weights of one random head under each mask: rows sum to 1."""
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    d_k = 8
    source_real = np.array([token != "[PAD]" for token in SOURCE])
    n_src, n_tgt = len(SOURCE), len(TARGET)

    def weights(n_q, n_k, mask):
        scores = rng.normal(size=(n_q, d_k)) @ rng.normal(size=(n_k, d_k)).T / np.sqrt(d_k)
        scores = np.where(mask, scores, -np.inf)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        return scores / scores.sum(axis=-1, keepdims=True)

    panels = [
        ("self (global)", SOURCE, SOURCE, np.broadcast_to(source_real, (n_src, n_src))),
        ("self (causal)", TARGET, TARGET, np.tril(np.ones((n_tgt, n_tgt), dtype=bool))),
        ("cross", TARGET, SOURCE, np.broadcast_to(source_real, (n_tgt, n_src))),
    ]
    with plt.rc_context(_STYLE):
        figure, axes_row = plt.subplots(1, 3, figsize=(12.5, 4.2), layout="constrained")
        for axes, (title, queries, keys, mask) in zip(axes_row, panels, strict=True):
            image = axes.imshow(
                weights(len(queries), len(keys), mask), cmap="viridis", vmin=0, vmax=1
            )
            axes.set_title(f"softmax weights, {title}", fontsize=10)
            axes.set_xticks(range(len(keys)), keys, rotation=60, ha="right")
            axes.set_yticks(range(len(queries)), queries)
        figure.colorbar(image, ax=list(axes_row), shrink=0.8, label="weight (each row sums to 1)")
        return _svg(figure)


def figures() -> dict[str, bytes]:
    import matplotlib

    matplotlib.use("Agg", force=False)
    return {
        "encoder_decoder.svg": encoder_decoder(),
        "attention_masks.svg": attention_masks(),
        "attention_weights.svg": attention_weights(),
    }


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "build/figures")
    out.mkdir(parents=True, exist_ok=True)
    for name, content in figures().items():
        (out / name).write_bytes(content)
        print(out / name)
