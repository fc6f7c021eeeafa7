"""Figures of a training run, each on its own `Figure` (never pyplot), saved as one PNG.

`plot_cross_attention` and `plot_it_attention` read a trained model's attention through a probe
of the same weights (built with `return_attention_scores=True`) and draw it with `plot_attention`."""

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
    schedule, steps: int, path: str | os.PathLike,
    title: str = "Learning-rate schedule (warm-up, then 1/sqrt(step))",
) -> str:  # fmt: skip
    """Learning rate against step of a `LearningRateSchedule` (any function of float32 steps)."""
    x = np.arange(max(int(steps), 1))
    fig, ax = figure()
    ax.plot(x, np.asarray(schedule(x.astype("float32"))))
    ax.set(xlabel="optimizer step", ylabel="learning rate", title=title)
    ax.grid(alpha=0.3)
    return save(fig, path)


def plot_attention(weights, query_tokens: list[str], key_tokens: list[str], path: str | os.PathLike,
                   title: str = "attention") -> str:  # fmt: skip
    """Heat maps of attention weights `(num_heads, q_len, kv_len)`, one per head."""
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
    fig.suptitle(title, fontsize=9)
    return save(fig, path, rect=(0, 0, 1, 0.96))


def plot_cross_attention(model, sizes, source_tokenizer, target_tokenizer, text, plots_dir) -> str:
    """Heat map of the last decoder layer's cross-attention while translating `text`."""
    from keras_transformer import data, models
    from keras_transformer.inference import Translator

    probe = models.build_transformer(
        source_tokenizer.vocab_size, target_tokenizer.vocab_size, config=sizes,
        return_attention_scores=True,
    )  # fmt: skip
    probe.set_weights(model.get_weights())
    translator = Translator(model, source_tokenizer, target_tokenizer, max_length=sizes.max_length)
    generated = [int(t) for t in translator.translate_tokens([text])[0] if t != 0]
    target_ids = np.array([[target_tokenizer.start_id, *generated[:-1]]], "int32")
    source_ids = np.asarray(data.encode_source([text], source_tokenizer, sizes.max_length))
    source_ids = source_ids[:, : int(np.count_nonzero(source_ids))]
    scores = probe({"source": source_ids, "target": target_ids}, training=False)
    weights = scores[f"decoder_layer_{sizes.num_layers - 1}_cross_attention"][0]
    return plot_attention(
        weights, _tokens(generated, target_tokenizer),
        _tokens(list(source_ids[0]), source_tokenizer),
        os.path.join(plots_dir, "cross_attention.png"),
        title=f"last decoder layer cross-attention: {text!r}",
    )  # fmt: skip


def _tokens(ids, tokenizer) -> list[str]:
    return [t.decode() for t in tokenizer.lookup(np.array([ids])).numpy()[0]]


def plot_it_attention(
    model, tokenizer, sentence: str, path: str, *,
    causal: bool = False, config=None, **sizes,
) -> str:  # fmt: skip
    """Heat map of every layer's attention *from "it"* (one row per layer, one panel per head).

    Args:
        model: a trained `build_token_classifier` model.
        tokenizer: its tokenizer.
        sentence: one `it-referent` sentence.
        path: where to write the PNG.
        causal: whether `model` is the causal (decoder-only) classifier.
        config, **sizes: the sizes `model` was built with, as in `build_encoder`.

    Returns:
        The path of the PNG.
    """
    from keras_transformer import data, models
    from keras_transformer.models.config import TransformerConfig

    config = TransformerConfig.resolve(config, sizes)
    prefix_name = "decoder" if causal else "encoder"
    probe = models.build_token_classifier(
        model.get_layer(f"{prefix_name}_embedding").vocab_size, model.get_layer("logits").units,
        causal=causal, config=config, return_attention_scores=True,
    )  # fmt: skip
    probe.set_weights(model.get_weights())
    ids = np.asarray(data.encode_source([sentence], tokenizer, config.max_length))
    position = int(np.argmax(ids[0] == tokenizer.token_to_id("it")))
    scores = probe(ids, training=False)
    layers = range(config.num_layers)
    names = [f"{prefix_name}_layer_{i}_self_attention" for i in layers]
    # (num_heads, num_layers, seq_len): the row of "it" in every layer (zero after "it" if causal)
    rows = np.stack([np.asarray(scores[name])[0, :, position] for name in names], axis=1)
    kind = "causal decoder" if causal else "encoder"
    return plot_attention(
        rows, [f"layer {i}: it" for i in layers], _tokens(list(ids[0]), tokenizer), path,
        title=f"{kind} attention from 'it': {sentence!r}",
    )  # fmt: skip
