"""Training runs for the encoder-only and decoder-only uses of the Transformer.

`keras-transformer train --architecture encoder | decoder-only` comes here
(`train_architecture`); the default `encoder-decoder` stays in `run.py`.

| task          | encoder                                   | decoder-only                              |
|---------------|-------------------------------------------|-------------------------------------------|
| `it-referent` | token classifier, label read at "it"      | the same, causal: "it" sees only its prefix |
| translation   | (not an encoder-only job)                 | `build_language_model` on "source [SEP] target" |

The "it" experiment of the course: both models are the same size and are
trained the same way; the encoder reaches ~1.0 test accuracy and the causal
model stays near chance (0.5), because the word that decides the referent
comes after "it".

Decoder-only translation reads the source as a prefix: one joint WordPiece
vocabulary, sequences `[START] source [SEP] target [END]`, loss on the target
part only, and decoding continues the prefix with the key/value cache
(`keras_transformer.inference.generate`). Its `metrics.json` has the same
figures as the encoder-decoder run plus `parameters`, so the two compare at
equal `d_model` and depth.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from keras_transformer import analysis, data, models
from keras_transformer.data import it_referent
from keras_transformer.inference.generation import generate
from keras_transformer.training.fitting import FitResult, fit_run, translation_metrics
from keras_transformer.training.losses import MaskedAccuracy, MaskedSparseCategoricalCrossentropy
from keras_transformer.training.optimizer import make_optimizer, paper_adam
from keras_transformer.training.rundir import (
    check_not_finished,
    check_splits,
    plot_run_curves,
    start_run_dir,
    write_config,
    write_json,
)

logger = logging.getLogger(__name__)

ARCHITECTURES: tuple[str, ...] = ("encoder-decoder", "encoder", "decoder-only", "dual-encoder")
"""Values of `TrainConfig.architecture` / `--architecture`."""

TOKEN_TASKS: tuple[str, ...] = ("it-referent",)
"""Tasks labelled at one token, trained with `build_token_classifier`."""

SEQUENCE_TASKS: tuple[str, ...] = ("imdb", "reviews")
"""Tasks labelled per sequence, trained with `build_classifier` (encoder only)."""

TRANSLATION_TASKS: tuple[str, ...] = (
    "numbers",
    "copy",
    "reverse",
    "sort",
    "recall",
    "tsv",
    "ted_hrlr_pt_en",
)
"""Pair tasks a decoder-only model learns as "source [SEP] target"."""


def check_architecture(architecture: str, task: str) -> None:
    """Raises `ValueError` unless `architecture` can train on `task`.

    Example:

    >>> check_architecture("decoder-only", "numbers")
    >>> check_architecture("encoder", "numbers")
    Traceback (most recent call last):
    ...
    ValueError: architecture='encoder' cannot train task='numbers': an encoder alone does not generate text; use --architecture encoder-decoder or decoder-only, or an encoder task: ['it-referent', 'imdb', 'reviews']
    """
    if architecture not in ARCHITECTURES:
        raise ValueError(
            f"architecture={architecture!r} is not known; choose one of {list(ARCHITECTURES)}."
        )
    if architecture == "encoder" and task not in TOKEN_TASKS + SEQUENCE_TASKS:
        raise ValueError(
            f"architecture='encoder' cannot train task={task!r}: an encoder alone does not "
            "generate text; use --architecture encoder-decoder or decoder-only, or an encoder "
            f"task: {list(TOKEN_TASKS + SEQUENCE_TASKS)}"
        )
    if architecture == "encoder-decoder" and task in TOKEN_TASKS + SEQUENCE_TASKS:
        raise ValueError(
            f"task={task!r} is a classification task; train it with --architecture encoder"
            + (" or decoder-only." if task in TOKEN_TASKS else ".")
        )
    if architecture == "dual-encoder" and task not in TRANSLATION_TASKS:
        raise ValueError(
            f"architecture='dual-encoder' learns sentence vectors from pairs that mean the "
            f"same; task={task!r} is not a pair task. Use one of {list(TRANSLATION_TASKS)}."
        )
    if architecture == "decoder-only" and task in SEQUENCE_TASKS:
        raise ValueError(
            f"task={task!r} is a sequence-classification task; train it with --architecture "
            "encoder."
        )


# ---------------------------------------------------------------------- shared run plumbing


def _optimizer(config) -> keras.optimizers.Optimizer:
    """The paper's warm-up schedule, or Adam at the constant `--learning-rate`."""
    if config.learning_rate is not None:
        return paper_adam(config.learning_rate)
    return make_optimizer(config.d_model, config.warmup_steps)


def _compile(model: keras.Model, config, xla: bool) -> keras.optimizers.Optimizer:
    optimizer = _optimizer(config)
    model.compile(
        optimizer=optimizer,
        loss=MaskedSparseCategoricalCrossentropy(label_smoothing=config.label_smoothing),
        metrics=[MaskedAccuracy()],
        jit_compile=xla,
    )
    return optimizer


def _fit(model: keras.Model, train_ds, val_ds, config, run_dir: str) -> FitResult:
    """`fit_run` with the run's settings, then `model.keras` (the best weights) is saved."""
    fit = fit_run(
        model,
        train_ds,
        val_ds,
        run_dir=run_dir,
        epochs=config.epochs,
        early_stopping_patience=config.early_stopping_patience,
    )
    model.save(os.path.join(run_dir, "model.keras"))
    return fit


def _plot_curves(run_dir: str, config, optimizer) -> None:
    plot_run_curves(run_dir, config, int(optimizer.iterations.numpy()))


def _stack_kwargs(config, max_length: int) -> dict:
    return {
        "num_layers": config.num_layers,
        "d_model": config.d_model,
        "num_heads": config.num_heads,
        "dff": config.dff,
        "dropout": config.dropout,
        "max_length": max_length,
    }


# ---------------------------------------------------------------------- the "it" experiment


def it_token_arrays(
    pairs: list[tuple[str, str]], tokenizer: data.WordPieceTokenizer, max_length: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ids, per-token labels and the position of "it" for `it-referent` pairs.

    Labels follow the package's padding convention: 0 means "no label here"
    (ignored by `MaskedSparseCategoricalCrossentropy` and `MaskedAccuracy`), and
    the position of "it" holds `1 + class` (1: the subject, 2: the object). A
    token classifier for this task therefore has `1 + len(CLASS_NAMES)` outputs.

    Args:
        pairs: `(sentence, referent)` pairs of `it_referent_task`.
        tokenizer: a `WordPieceTokenizer` whose vocabulary holds the word "it".
        max_length: longest framed row (`[START]` and `[END]` included).

    Returns:
        `(ids, labels, positions)`: int32 `(n, seq_len)`, `(n, seq_len)`, `(n,)`.

    Example:

    >>> from keras_transformer.data import load_task, WordPieceTokenizer
    >>> task = load_task("it-referent", num_train=50, num_validation=0, num_test=0)
    >>> tokenizer = WordPieceTokenizer.learn([s for s, _ in task.train], 300)
    >>> ids, labels, positions = it_token_arrays(task.train[:2], tokenizer, 32)
    >>> int((labels != 0).sum()), bool(ids[0, positions[0]] == tokenizer.token_to_id("it"))
    (2, True)
    """
    ids = np.asarray(data.encode_source([s for s, _ in pairs], tokenizer, max_length))
    it_id = tokenizer.token_to_id("it")
    hits = ids == it_id
    if not (hits.sum(axis=1) == 1).all():
        raise ValueError(
            "every sentence must hold the token 'it' exactly once within "
            f"max_length={max_length}; raise max_length or check the sentences."
        )
    positions = hits.argmax(axis=1).astype("int32")
    labels = np.zeros_like(ids)
    labels[np.arange(len(ids)), positions] = 1 + it_referent.referent_labels(pairs)
    return ids.astype("int32"), labels.astype("int32"), positions


def _train_it_referent(config, task: data.Task, run_dir: str, xla: bool) -> dict:
    causal = config.architecture == "decoder-only"
    tokenizer = data.WordPieceTokenizer.learn([s for s, _ in task.train], config.vocab_size)
    tokenizer.save(os.path.join(run_dir, "tokenizers", "source"))
    arrays = {
        split: it_token_arrays(task.split(split), tokenizer, config.max_length)
        for split in ("train", "validation", "test")
    }

    def dataset(split, training):
        ids, labels, _ = arrays[split]
        ds = tf.data.Dataset.from_tensor_slices((ids, labels))
        if training:
            ds = ds.shuffle(len(ids), seed=config.seed, reshuffle_each_iteration=True)
        return ds.batch(config.batch_size).prefetch(tf.data.AUTOTUNE)

    num_classes = 1 + len(it_referent.CLASS_NAMES)
    kwargs = _stack_kwargs(config, config.max_length)
    model = models.build_token_classifier(
        tokenizer.vocab_size, num_classes, causal=causal, **kwargs
    )
    optimizer = _compile(model, config, xla)
    write_config(
        config,
        run_dir,
        jit_compile_resolved=xla,
        source_vocab_size=tokenizer.vocab_size,
        num_classes=num_classes,
        class_names=list(it_referent.CLASS_NAMES),
    )
    fit = _fit(model, dataset("train", True), dataset("validation", False), config, run_dir)

    ids, labels, positions = arrays["test"]
    logits = model.predict(ids, batch_size=config.batch_size, verbose=0)
    at_it = logits[np.arange(len(ids)), positions, 1:]  # (n, classes): the "no label" logit dropped
    predicted = at_it.argmax(axis=-1)
    truth = labels[np.arange(len(ids)), positions] - 1
    sentences = [s for s, _ in task.test]
    metrics = {
        "architecture": config.architecture,
        "test_accuracy": float((predicted == truth).mean()),
        "chance_accuracy": float(max(np.bincount(truth, minlength=2)) / len(truth)),
        "train_seconds": round(fit.seconds, 2),
        "train_sentences_per_second": round(
            len(arrays["train"][0]) * fit.epochs_run / fit.seconds, 1
        ),
        "epochs_run": fit.epochs_run,
        "stopped_on_nan": fit.stopped_on_nan,
        "parameters": int(model.count_params()),
        "num_test": len(truth),
        "samples": [
            {
                "sentence": sentences[i],
                "reference": task.test[i][1],
                "prediction": it_referent.nouns(sentences[i])[int(predicted[i])],
            }
            for i in range(min(5, len(truth)))
        ],
    }
    write_json(os.path.join(run_dir, "metrics.json"), metrics)
    _plot_curves(run_dir, config, optimizer)
    plot_it_attention(
        model,
        tokenizer,
        sentences[0],
        os.path.join(run_dir, "plots", "it_attention.png"),
        causal=causal,
        **kwargs,
    )
    return metrics


def plot_it_attention(
    model: keras.Model,
    tokenizer: data.WordPieceTokenizer,
    sentence: str,
    path: str,
    **builder_kwargs: Any,
) -> str:
    """Heat map of every layer's attention *from "it"* to the tokens of `sentence`.

    One row per layer (the query is the token "it"), one panel per head. A
    causal model's weights after "it" are zero: it cannot look at the word
    that decides the referent, which is the whole point of the experiment.

    Args:
        model: a trained `build_token_classifier` model.
        tokenizer: its tokenizer.
        sentence: one `it-referent` sentence.
        path: where to write the PNG.
        **builder_kwargs: the arguments `model` was built with
            (`causal`, `num_layers`, `d_model`, `num_heads`, `dff`, `max_length`, ...).

    Returns:
        The path of the PNG.
    """
    num_classes = model.get_layer("logits").units
    vocab_size = model.get_layer(
        "decoder_embedding" if builder_kwargs.get("causal") else "encoder_embedding"
    ).vocab_size
    probe = models.build_token_classifier(
        vocab_size, num_classes, **builder_kwargs, return_attention_scores=True
    )
    probe.set_weights(model.get_weights())
    max_length = builder_kwargs.get("max_length", 512)
    ids = np.asarray(data.encode_source([sentence], tokenizer, max_length))
    position = int(np.argmax(ids[0] == tokenizer.token_to_id("it")))
    scores = probe(ids, training=False)
    prefix = "decoder" if builder_kwargs.get("causal") else "encoder"
    num_layers = builder_kwargs.get("num_layers", 2)
    rows = np.stack(
        [
            np.asarray(scores[f"{prefix}_layer_{i}_self_attention"])[0, :, position, :]
            for i in range(num_layers)
        ],
        axis=1,
    )  # (num_heads, num_layers, seq_len): the row of "it" in every layer
    tokens = [t.decode() for t in tokenizer.lookup(ids).numpy()[0]]
    kind = "causal decoder" if builder_kwargs.get("causal") else "encoder"
    return analysis.plots.plot_attention(
        rows,
        [f"layer {i}: it" for i in range(num_layers)],
        tokens,
        path,
        title=f"{kind} attention from 'it': {sentence!r}",
    )


# ---------------------------------------------------------------------- decoder-only translation


def prefix_sequences(
    pairs: list[tuple[str, str]], tokenizer: data.WordPieceTokenizer, max_length: int
) -> tuple[tf.RaggedTensor, tf.RaggedTensor]:
    """`[START] source [SEP] target [END]` as inputs and labels for a language model.

    Each side keeps at most `max_length - 2` tokens. The inputs are the sequence
    without its last token, the labels the sequence shifted by one, with every
    label before the target set to 0 so the loss counts the target (and `[END]`)
    only: the model learns to continue a source, not to model sources.

    Args:
        pairs: `(source, target)` strings.
        tokenizer: one joint `WordPieceTokenizer` for both sides.
        max_length: longest framed side, as in `make_dataset`.

    Returns:
        `(inputs, labels)`, int32 ragged `(n, None)` of equal row lengths.

    Example:

    >>> from keras_transformer.data import WordPieceTokenizer
    >>> tokenizer = WordPieceTokenizer.learn(["a b", "x y"], 40)
    >>> inputs, labels = prefix_sequences([("a b", "x")], tokenizer, 8)
    >>> [tokenizer.vocabulary[i] for i in inputs[0].numpy()]
    ['[START]', 'a', 'b', '[SEP]', 'x']
    >>> [tokenizer.vocabulary[i] for i in labels[0].numpy()]
    ['[PAD]', '[PAD]', '[PAD]', 'x', '[END]']
    """
    sources = tokenizer.tokenize(tf.constant([s for s, _ in pairs]))[:, : max_length - 2]
    targets = tokenizer.tokenize(tf.constant([t for _, t in pairs]))[:, : max_length - 2]
    sources = tf.cast(sources, tf.int32)
    targets = tf.cast(targets, tf.int32)
    rows = tf.stack([sources.nrows(), 1])

    def column(token_id):
        return tf.RaggedTensor.from_tensor(tf.fill(rows, tf.constant(token_id, tf.int32)))

    prompt = tf.concat([column(tokenizer.start_id), sources, column(tokenizer.sep_id)], axis=1)
    sequence = tf.concat([prompt, targets, column(tokenizer.end_id)], axis=1)
    inputs = sequence[:, :-1]
    # label i is token i+1; positions before [SEP] (the source) get 0
    ignore = tf.ragged.map_flat_values(tf.zeros_like, prompt[:, :-1])
    labels = tf.concat([ignore, targets, column(tokenizer.end_id)], axis=1)
    return inputs, labels


def encode_prompts(
    sources: list[str], tokenizer: data.WordPieceTokenizer, max_length: int
) -> np.ndarray:
    """`[START] source [SEP]`, 0-padded on the right: the prompts `generate` continues."""
    ids = tf.cast(tokenizer.tokenize(tf.constant(sources))[:, : max_length - 2], tf.int32)
    rows = tf.stack([ids.nrows(), 1])
    start = tf.RaggedTensor.from_tensor(tf.fill(rows, tf.constant(tokenizer.start_id, tf.int32)))
    sep = tf.RaggedTensor.from_tensor(tf.fill(rows, tf.constant(tokenizer.sep_id, tf.int32)))
    return tf.concat([start, ids, sep], axis=1).to_tensor(default_value=0).numpy()


def translate_by_prefix(
    model: keras.Model,
    tokenizer: data.WordPieceTokenizer,
    sources: list[str],
    max_length: int,
    *,
    batch_size: int = 256,
) -> list[str]:
    """Greedy translations of `sources` by a decoder-only model (KV cache).

    Args:
        model: a `build_language_model` trained on `prefix_sequences`.
        tokenizer: its joint tokenizer.
        sources: source strings.
        max_length: longest framed side (the target gets `max_length - 1` steps).
        batch_size: prompts decoded together.

    Returns:
        The detokenized targets, in order.
    """
    results: list[str] = []
    for begin in range(0, len(sources), batch_size):
        prompts = encode_prompts(sources[begin : begin + batch_size], tokenizer, max_length)
        lengths = (prompts != 0).sum(axis=1)
        total = prompts.shape[1] + max_length - 1
        tokens = generate(model, prompts, max_length=total, end_id=tokenizer.end_id)
        continuations = []
        for row, length in zip(tokens, lengths, strict=True):
            generated = list(row[length:])
            if tokenizer.end_id in generated:
                generated = generated[: generated.index(tokenizer.end_id)]
            continuations.append(generated)
        ragged = tf.ragged.constant(continuations, dtype=tf.int32, ragged_rank=1)
        results.extend(t.decode("utf-8") for t in tokenizer.detokenize(ragged).numpy())
    return results


def _train_prefix_translation(config, task: data.Task, run_dir: str, xla: bool) -> dict:
    texts = [s for s, _ in task.train] + [t for _, t in task.train]
    tokenizer = data.WordPieceTokenizer.learn(texts, config.vocab_size)
    tokenizer.save(os.path.join(run_dir, "tokenizers", "joint"))
    sequence_length = 2 * config.max_length  # source and target, each up to max_length

    def dataset(pairs, training):
        inputs, labels = prefix_sequences(pairs, tokenizer, config.max_length)
        ds = tf.data.Dataset.from_tensor_slices((inputs, labels))
        if training:
            ds = ds.shuffle(len(pairs), seed=config.seed, reshuffle_each_iteration=True)
        ds = ds.ragged_batch(config.batch_size, drop_remainder=training)
        ds = ds.map(lambda x, y: (x.to_tensor(), y.to_tensor()))  # padded to the batch's longest
        return ds.cache().prefetch(tf.data.AUTOTUNE)

    if len(task.train) < config.batch_size:  # incomplete training batches are dropped
        raise ValueError(
            f"the {len(task.train)} training pairs fill no complete batch of --batch-size "
            f"{config.batch_size}; lower --batch-size or raise --num-train."
        )
    train_ds = dataset(task.train, True)
    tokens_per_epoch = sum(int(tf.math.count_nonzero(labels)) for _, labels in train_ds)
    model = models.build_language_model(
        tokenizer.vocab_size, **_stack_kwargs(config, sequence_length)
    )
    optimizer = _compile(model, config, xla)
    write_config(
        config,
        run_dir,
        jit_compile_resolved=xla,
        joint_vocab_size=tokenizer.vocab_size,
        sequence_length=sequence_length,
    )
    fit = _fit(model, train_ds, dataset(task.validation, False), config, run_dir)
    metrics = {
        "architecture": config.architecture,
        **translation_metrics(
            model,
            fit,
            dataset(task.test, False),
            task.test,
            lambda sources: translate_by_prefix(model, tokenizer, sources, config.max_length),
            tokens_per_epoch,
        ),
    }
    write_json(os.path.join(run_dir, "metrics.json"), metrics)
    _plot_curves(run_dir, config, optimizer)
    return metrics


def _train_sequence_classifier(
    config, task: data.Task, run_dir: str, xla: bool, init: tuple | None = None
) -> dict:
    from keras_transformer.training.pretraining import SIZE_KEYS, classification_dataset

    class_names = sorted({label for _, label in task.train})
    sizes = _stack_kwargs(config, config.max_length)
    pretrained = None
    if init is not None:  # the pre-trained encoder fixes the tokenizer and the sizes
        pretrained, tokenizer, pretrain_config = init
        sizes.update({key: pretrain_config[key] for key in SIZE_KEYS})
        logger.info("fine-tuning the encoder of %s: %s", config.init_from, sizes)
    else:
        tokenizer = data.WordPieceTokenizer.learn([s for s, _ in task.train], config.vocab_size)
    tokenizer.save(os.path.join(run_dir, "tokenizers", "source"))
    warn_if_truncated_texts([s for s, _ in task.train], tokenizer, sizes["max_length"])

    def dataset(pairs, training):
        return classification_dataset(
            pairs,
            tokenizer,
            class_names,
            batch_size=config.batch_size,
            max_length=sizes["max_length"],
            seed=config.seed,
            shuffle=training,
        )

    model = models.build_classifier(tokenizer.vocab_size, len(class_names), pooling="cls", **sizes)
    transferred = models.transfer_weights(pretrained, model) if pretrained is not None else []
    if config.freeze_embeddings:  # see pretraining.fine_tune: small labelled sets move them
        model.get_layer("encoder_embedding").trainable = False
    optimizer = _optimizer(config)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        jit_compile=xla,
    )
    write_config(
        config,
        run_dir,
        jit_compile_resolved=xla,
        source_vocab_size=tokenizer.vocab_size,
        class_names=class_names,
        model_sizes=sizes,
    )
    train_ds = dataset(task.train, True)
    fit = _fit(model, train_ds, dataset(task.validation, False), config, run_dir)
    test_loss, test_accuracy = model.evaluate(dataset(task.test, False), verbose=0)
    counts = np.bincount([class_names.index(label) for _, label in task.test])
    metrics = {
        "architecture": config.architecture,
        "test_accuracy": float(test_accuracy),
        "test_loss": float(test_loss),
        "chance_accuracy": float(counts.max() / counts.sum()),
        "initialized_from": config.init_from,
        "transferred_layers": transferred,
        "train_seconds": round(fit.seconds, 2),
        "epochs_run": fit.epochs_run,
        "stopped_on_nan": fit.stopped_on_nan,
        "parameters": int(model.count_params()),
        "num_test": len(task.test),
        "samples": [],
    }
    write_json(os.path.join(run_dir, "metrics.json"), metrics)
    _plot_curves(run_dir, config, optimizer)
    return metrics


def _train_dual_encoder(config, task: data.Task, run_dir: str, xla: bool) -> dict:
    from keras_transformer.inference.sentence_encoder import SentenceEncoder, retrieval_accuracy
    from keras_transformer.training.dual_encoder import build_dual_encoder, pair_dataset

    texts = [s for s, _ in task.train] + [t for _, t in task.train]
    tokenizer = data.WordPieceTokenizer.learn(texts, config.vocab_size)
    tokenizer.save(os.path.join(run_dir, "tokenizers", "joint"))
    if len(task.train) < config.batch_size:
        raise ValueError(
            f"the {len(task.train)} training pairs fill no batch of --batch-size "
            f"{config.batch_size} (each batch is the set of candidates); lower --batch-size."
        )

    def dataset(pairs, batch_size, training):
        return pair_dataset(
            pairs,
            tokenizer,
            batch_size=batch_size,
            max_length=config.max_length,
            shuffle=training,
            seed=config.seed,
        )

    sizes = _stack_kwargs(config, config.max_length)
    model, encoder = build_dual_encoder(tokenizer.vocab_size, pooling="mean", **sizes)
    optimizer = paper_adam(1e-3 if config.learning_rate is None else config.learning_rate)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="in_batch_accuracy")],
        jit_compile=xla,
    )
    write_config(
        config, run_dir, jit_compile_resolved=xla, joint_vocab_size=tokenizer.vocab_size,
        pooling="mean",
    )  # fmt: skip
    validation_batch = min(config.batch_size, len(task.validation))
    fit = _fit(
        model,
        dataset(task.train, config.batch_size, True),
        dataset(task.validation, validation_batch, False),
        config,
        run_dir,
    )
    search = SentenceEncoder(encoder, tokenizer, pooling="mean", max_length=config.max_length)
    sources = [s for s, _ in task.test]
    targets = [t for _, t in task.test]
    nearest = search.similarity(sources, targets).argmax(axis=1)
    metrics = {
        "architecture": config.architecture,
        # the right translation among all the test translations, and the other way round
        "test_retrieval_accuracy_at_1": retrieval_accuracy(search, sources, targets),
        "test_reverse_retrieval_accuracy_at_1": retrieval_accuracy(search, targets, sources),
        "chance_accuracy": 1.0 / len(task.test),
        "train_seconds": round(fit.seconds, 2),
        "epochs_run": fit.epochs_run,
        "stopped_on_nan": fit.stopped_on_nan,
        "parameters": int(model.count_params()),
        "num_test": len(task.test),
        "samples": [
            {"query": sources[i], "reference": targets[i], "retrieved": targets[int(nearest[i])]}
            for i in range(min(5, len(sources)))
        ],
    }
    write_json(os.path.join(run_dir, "metrics.json"), metrics)
    _plot_curves(run_dir, config, optimizer)
    return metrics


def warn_if_truncated_texts(
    texts: list[str], tokenizer: data.WordPieceTokenizer, max_length: int
) -> int:
    """Log how many texts exceed `max_length` framed tokens (they are truncated); return it."""
    lengths = tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()
    count = int((lengths > max_length - 2).sum())  # [START] and [END] take two positions
    if count:
        logger.warning(
            "%d of %d training text(s) exceed max_length=%d tokens and are truncated; raise "
            "--max-length to keep them whole.",
            count,
            len(texts),
            max_length,
        )
    return count


def train_architecture(config) -> dict:
    """Runs `config` (a `TrainConfig` whose `architecture` is not encoder-decoder).

    Writes the run directory as `train` does (`model.keras`, `tokenizers/`,
    `config.json`, `history.csv`, `metrics.json`, `plots/`) and returns the metrics.

    Args:
        config: a `keras_transformer.training.run.TrainConfig`.

    Returns:
        The content of `metrics.json`.
    """
    from keras_transformer.training.run import use_xla

    check_architecture(config.architecture, config.task)
    if config.strategy != "none" or config.mixed_precision not in (None, "auto"):
        raise ValueError(
            f"--architecture {config.architecture} runs on one device in float32; drop "
            f"--strategy {config.strategy} / --mixed-precision {config.mixed_precision}."
        )
    run_dir = config.run_dir
    check_not_finished(run_dir, config.overwrite)
    task = data.load_task(config.task, **config.task_options())  # checked before any file is made
    check_splits(task)
    init = None
    if config.init_from:  # read (and checked) before the run directory is made
        from keras_transformer.training.pretraining import load_pretrained

        init = load_pretrained(config.init_from)
    start_run_dir(config, run_dir)
    xla = use_xla(config.jit_compile)
    if config.task in TOKEN_TASKS:
        return _train_it_referent(config, task, run_dir, xla)
    if config.task in SEQUENCE_TASKS:
        return _train_sequence_classifier(config, task, run_dir, xla, init)
    if config.architecture == "dual-encoder":
        return _train_dual_encoder(config, task, run_dir, xla)
    return _train_prefix_translation(config, task, run_dir, xla)
