"""One training run, end to end: data, tokenizers, model.fit, evaluation, files.

`train(TrainConfig(...))` is what `keras-transformer train` calls. It writes a
run directory:

    model.keras                  the trained model (best validation loss)
    tokenizers/source/vocab.txt  WordPiece vocabularies
    tokenizers/target/vocab.txt
    config.json                  every setting of the run
    history.csv                  one row per epoch (Keras CSVLogger)
    metrics.json                 test quality, speed, parameters
    plots/*.png                  curves, learning rate, cross-attention
    checkpoints/                 best weights; backup/ for resuming
    logs/                        TensorBoard

With `strategy` other than "none" the run goes through `tf.distribute` (see
`keras_transformer.training.distribute` and docs/scaling.md): the model is built
and compiled inside `strategy.scope()`, `batch_size` is the global batch split
across the replicas, and under multi-worker training only the chief writes the
run directory (the other workers write to `workertemp_<id>/` and delete it).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from keras_transformer import analysis, data, models
from keras_transformer.inference import greedy_decode
from keras_transformer.training import distribute
from keras_transformer.training.architectures import check_architecture, train_architecture
from keras_transformer.training.fitting import fit_run, translation_metrics
from keras_transformer.training.losses import MaskedAccuracy, MaskedSparseCategoricalCrossentropy
from keras_transformer.training.optimizer import make_optimizer, paper_adam
from keras_transformer.training.rundir import (
    check_model_sizes,
    check_not_finished,
    check_splits,
    make_run_dir,
    plot_run_curves,
    write_json,
)

logger = logging.getLogger(__name__)

PRECISIONS = {None: "float32", "none": "float32", "bf16": "mixed_bfloat16", "fp16": "mixed_float16"}
"""Keras dtype policies of `--mixed-precision`; `"auto"` resolves to one of them."""


@dataclass
class TrainConfig:
    """Settings of a training run; the defaults train the README's main job."""

    task: str = "numbers"
    source_lang: str = "en"
    target_lang: str = "de"
    data: str | None = None
    num_train: int | None = None
    num_validation: int | None = None
    num_test: int | None = None
    epochs: int = 12
    batch_size: int = 64
    max_length: int = 48
    num_layers: int = 2
    d_model: int = 128
    num_heads: int = 4
    dff: int = 256
    dropout: float = 0.1
    vocab_size: int = 2000
    warmup_steps: int = 1000
    label_smoothing: float = 0.1
    early_stopping_patience: int = 4
    out: str | None = None
    seed: int = 0
    jit_compile: str = "auto"
    mixed_precision: str | None = "auto"
    overwrite: bool = False
    strategy: str = "none"
    cpu_devices: int | None = None
    architecture: str = "encoder-decoder"
    learning_rate: float | None = None
    init_from: str | None = None
    freeze_embeddings: bool = False
    skip_malformed: bool = False

    def __post_init__(self):
        distribute.check_strategy_options(self.strategy, self.cpu_devices)
        check_architecture(self.architecture, self.task)
        if self.jit_compile not in ("auto", "on", "off"):
            raise ValueError(
                f"jit_compile must be 'auto', 'on' or 'off'; received {self.jit_compile!r}."
            )
        if self.mixed_precision not in (*PRECISIONS, "auto"):
            raise ValueError(
                f"mixed_precision must be one of 'auto', 'bf16', 'fp16' or None; "
                f"received {self.mixed_precision!r}."
            )
        for name in ("epochs", "batch_size", "max_length", "vocab_size", "warmup_steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer; received {name}={value!r}.")
        if self.learning_rate is not None and not (
            isinstance(self.learning_rate, (int, float)) and self.learning_rate > 0
        ):
            raise ValueError(
                f"learning_rate must be > 0 (or None for the warm-up schedule); received "
                f"learning_rate={self.learning_rate!r}."
            )
        if self.init_from is not None and (
            self.architecture != "encoder" or self.task not in ("reviews", "imdb")
        ):
            raise ValueError(
                "--init-from RUN_DIR fine-tunes a pre-trained encoder on a sequence "
                "classification task: use it with --architecture encoder and --task reviews "
                f"or imdb (received --architecture {self.architecture} --task {self.task})."
            )
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(
                f"label_smoothing must be in [0, 1); received label_smoothing={self.label_smoothing}."
            )
        check_model_sizes(self)  # before minutes of data work

    @property
    def run_dir(self) -> str:
        if self.out:
            return self.out
        name = self.task
        if self.task in ("numbers",):
            name = f"{self.task}_{self.source_lang}_{self.target_lang}"
        if self.architecture != "encoder-decoder":
            name = f"{name}_{self.architecture}"
        return os.path.join("runs", name)

    def task_options(self) -> dict:
        """The loader options this config sets, restricted to those the task accepts.

        Raises:
            ValueError: if an option the task does not have was set (e.g.
                `--data` for a generated task).
        """
        accepted = data.task_options(self.task)
        options = {}
        if "seed" in accepted:
            options["seed"] = self.seed
        if self.task == "numbers":
            options.update(source_lang=self.source_lang, target_lang=self.target_lang)
        if self.task == "tsv":
            if not self.data:
                raise ValueError("task 'tsv' needs --data PATH to a tab-separated file.")
            options["path"] = self.data
            options["on_error"] = "skip" if self.skip_malformed else "raise"
        elif self.data:
            raise ValueError(f"--data is only read by --task tsv; task {self.task!r} ignores it.")
        for name in ("num_train", "num_validation", "num_test"):
            if getattr(self, name) is not None:
                if name not in accepted:
                    raise ValueError(
                        f"task {self.task!r} has no option {name}; drop --{name.replace('_', '-')}."
                    )
                options[name] = getattr(self, name)
        return options


def resolve_precision(setting: str | None) -> str | None:
    """`"auto"` -> `"bf16"` on a GPU that computes in bfloat16 (compute capability
    8.0 and up), `"fp16"` on older GPUs with tensor cores (7.0 and up), else None
    (float32: on a CPU, mixed precision only adds casts). Other values pass through.

    Example:

    >>> resolve_precision("fp16"), resolve_precision("none")
    ('fp16', None)
    """
    if setting != "auto":
        return None if setting == "none" else setting
    capabilities = [
        tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
        for gpu in tf.config.list_physical_devices("GPU")
    ]
    if capabilities and min(capabilities) >= (8, 0):
        return "bf16"
    if capabilities and min(capabilities) >= (7, 0):
        return "fp16"
    return None


def use_xla(setting: str) -> bool:
    """`auto`: XLA on when a GPU is present (it slows small models on CPU)."""
    if setting == "auto":
        return bool(tf.config.list_physical_devices("GPU"))
    return setting == "on"


def with_known_length(dataset: tf.data.Dataset) -> tuple[tf.data.Dataset, int]:
    """One pass over `dataset` (filling its cache): its batch count is declared and
    the number of non-padding label tokens per epoch returned.

    Bucketing hides the number of batches from tf.data; once it is known, Keras
    shows a full progress bar and does not warn that the input "ran out of data".
    The count is the same every epoch: each bucket keeps the same pairs.
    """
    batches = tokens = 0
    for _, labels in dataset:
        batches += 1
        tokens += int(tf.math.count_nonzero(labels))
    return dataset.apply(tf.data.experimental.assert_cardinality(batches)), tokens


def warn_if_truncated(pairs, tokenizer_src, tokenizer_tgt, max_length: int) -> int:
    """Log how many pairs are longer than `max_length` tokens (they get truncated)."""
    longest = max_length - 2  # [START] and [END] take two positions
    count = 0
    for side, tokenizer in ((0, tokenizer_src), (1, tokenizer_tgt)):
        texts = tf.constant([pair[side] for pair in pairs])
        lengths = tokenizer.tokenize(texts).row_lengths().numpy()
        count = max(count, int((lengths > longest).sum()))
    if count:
        logger.warning(
            "%d training pair(s) exceed max_length=%d tokens and are truncated; raise "
            "--max-length to keep them whole.",
            count,
            max_length,
        )
    return count


def translate_ids(
    model, tokenizer_src, tokenizer_tgt, sources, max_length
) -> tuple[list[str], tf.Tensor]:
    """Greedy translations of `sources`: the detokenized strings and the target ids."""
    source_ids = np.asarray(data.encode_source(sources, tokenizer_src, max_length))
    tokens = greedy_decode(
        model,
        source_ids,
        start_id=tokenizer_tgt.start_id,
        end_id=tokenizer_tgt.end_id,
        max_length=max_length - 1,
    )
    return [t.decode("utf-8") for t in tokenizer_tgt.detokenize(tokens).numpy()], tokens


def train(config: TrainConfig) -> dict:
    """Run one training job and write its run directory; returns `metrics.json`."""
    if config.architecture != "encoder-decoder":  # encoder-only / decoder-only jobs
        return train_architecture(config)
    check_not_finished(config.run_dir, config.overwrite)
    # First TensorFlow call: logical devices and collectives are fixed at start-up.
    strategy = distribute.make_strategy(config.strategy, config.cpu_devices)
    per_replica_batch = distribute.check_global_batch(config.batch_size, strategy)
    logger.info(
        "global batch %d = %d replica(s) x %d",
        config.batch_size,
        strategy.num_replicas_in_sync,
        per_replica_batch,
    )
    # The chief writes the run directory; other workers a temporary one.
    # The data is read (and checked) before the run directory is created.
    task = data.load_task(config.task, **config.task_options())
    check_splits(task)
    run_dir = make_run_dir(distribute.write_dir(config.run_dir, strategy))

    keras.utils.set_random_seed(config.seed)
    precision = resolve_precision(config.mixed_precision)
    keras.mixed_precision.set_global_policy(PRECISIONS[precision])
    xla = use_xla(config.jit_compile)

    logger.info(
        "task %s: %d train, %d validation, %d test pairs",
        task.name,
        len(task.train),
        len(task.validation),
        len(task.test),
    )
    tokenizer_src = data.WordPieceTokenizer.learn([s for s, _ in task.train], config.vocab_size)
    tokenizer_tgt = data.WordPieceTokenizer.learn([t for _, t in task.train], config.vocab_size)
    tokenizer_src.save(os.path.join(run_dir, "tokenizers", "source"))
    tokenizer_tgt.save(os.path.join(run_dir, "tokenizers", "target"))

    warn_if_truncated(task.train, tokenizer_src, tokenizer_tgt, config.max_length)

    def dataset(pairs, training):
        return data.make_dataset(
            pairs,
            tokenizer_src,
            tokenizer_tgt,
            batch_size=config.batch_size,
            max_length=config.max_length,
            shuffle=training,
            seed=config.seed,
            drop_remainder=training,
        )

    train_ds, tokens_per_epoch = with_known_length(dataset(task.train, True))
    if tokens_per_epoch == 0:  # every length bucket holds fewer pairs than one batch
        raise ValueError(
            f"the {len(task.train)} training pairs fill no complete batch of --batch-size "
            f"{config.batch_size} (batches are grouped by length and incomplete ones dropped); "
            "lower --batch-size or raise --num-train."
        )
    val_ds, _ = with_known_length(dataset(task.validation, False))
    test_ds = dataset(task.test, False)

    with strategy.scope():  # variables mirrored on every replica
        model = models.build_transformer(
            tokenizer_src.vocab_size,
            tokenizer_tgt.vocab_size,
            num_layers=config.num_layers,
            d_model=config.d_model,
            num_heads=config.num_heads,
            dff=config.dff,
            dropout=config.dropout,
            max_length=config.max_length,
        )
        optimizer = (
            make_optimizer(config.d_model, config.warmup_steps)
            if config.learning_rate is None
            else paper_adam(config.learning_rate)
        )
        model.compile(
            optimizer=optimizer,
            loss=MaskedSparseCategoricalCrossentropy(label_smoothing=config.label_smoothing),
            metrics=[MaskedAccuracy()],
            jit_compile=xla,
        )
    distribute.prepare_for_strategy(model, train_ds.element_spec)
    with open(os.path.join(run_dir, "config.json"), "w") as handle:
        json.dump(
            {
                **dataclasses.asdict(config),
                "run_dir": config.run_dir,
                "jit_compile_resolved": xla,
                "mixed_precision_resolved": precision,
                "num_replicas": strategy.num_replicas_in_sync,
                "source_vocab_size": tokenizer_src.vocab_size,
                "target_vocab_size": tokenizer_tgt.vocab_size,
                "keras_version": keras.__version__,
                "tensorflow_version": tf.__version__,
            },
            handle,
            indent=2,
        )

    fit = fit_run(
        model,
        train_ds,
        val_ds,
        run_dir=run_dir,
        epochs=config.epochs,
        early_stopping_patience=config.early_stopping_patience,
    )
    model.save(os.path.join(run_dir, "model.keras"))

    metrics = translation_metrics(
        model,
        fit,
        test_ds,
        task.test,
        lambda sources: translate_ids(
            model, tokenizer_src, tokenizer_tgt, sources, config.max_length
        )[0],
        tokens_per_epoch,
    )
    write_json(os.path.join(run_dir, "metrics.json"), metrics)

    plots = os.path.join(run_dir, "plots")
    plot_run_curves(run_dir, config, int(optimizer.iterations.numpy()))
    plot_cross_attention(model, config, tokenizer_src, tokenizer_tgt, task.test[0][0], plots)
    keras.mixed_precision.set_global_policy("float32")
    if run_dir != config.run_dir:  # a non-chief worker: its files were only a copy
        shutil.rmtree(run_dir, ignore_errors=True)
    return metrics


def plot_cross_attention(model, config, tokenizer_src, tokenizer_tgt, source, plots_dir) -> str:
    """Heat map of the last decoder layer's cross-attention on one translation."""
    probe = models.build_transformer(
        tokenizer_src.vocab_size,
        tokenizer_tgt.vocab_size,
        num_layers=config.num_layers,
        d_model=config.d_model,
        num_heads=config.num_heads,
        dff=config.dff,
        dropout=config.dropout,
        max_length=config.max_length,
        return_attention_scores=True,
    )
    probe.set_weights(model.get_weights())
    _, tokens = translate_ids(model, tokenizer_src, tokenizer_tgt, [source], config.max_length)
    generated = [int(t) for t in tokens[0] if t != 0]
    target = np.array([[tokenizer_tgt.start_id, *generated[:-1]]], "int32")
    source_ids = np.asarray(data.encode_source([source], tokenizer_src, config.max_length))
    source_ids = source_ids[:, : int(np.count_nonzero(source_ids))]
    scores = probe({"source": source_ids, "target": target}, training=False)
    weights = scores[f"decoder_layer_{config.num_layers - 1}_cross_attention"][0]

    def lookup(ids, tokenizer):
        return [t.decode() for t in tokenizer.lookup(np.array([ids])).numpy()[0]]

    return analysis.plots.plot_attention(
        weights,
        lookup(generated, tokenizer_tgt),
        lookup(list(source_ids[0]), tokenizer_src),
        os.path.join(plots_dir, "cross_attention.png"),
        title=f"last decoder layer cross-attention: {source!r}",
    )
