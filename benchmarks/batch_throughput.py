"""Training throughput on a real corpus at several batch sizes, XLA off/on and precisions, in one
process.

What a `train --task tsv --time-budget` run of the 2 x 64 rung spends its budget on: the
step of `model.fit` on length-bucketed batches of real sentence pairs. Each variant (batch
size, XLA, precision) gets its own model and dataset; the variants take turns, a chunk of steps
each, for `--repeats` rounds, so that a noisy machine slows them alike. Printed: target tokens
(non-padding labels) per second, the median over the rounds, and the ratio to the first
variant.

    python benchmarks/batch_throughput.py --data /tmp/corpora/anki-en-es/pairs.tsv \\
        --batches 64 128 256 --xla off on --steps 40 --repeats 3
    python benchmarks/batch_throughput.py --data pairs.tsv --pairs 100000 --batches 64 \\
        --xla off on --precision float32 mixed_bfloat16
    python benchmarks/batch_throughput.py --data europarl.tsv --max-length 104 --batches 64 \\
        --padding bucket batch
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import keras_transformer as kt  # noqa: E402
from keras_transformer.data.tasks.tsv import read_tsv  # noqa: E402


def variant(pairs, source, target, *, batch_size, xla, precision, sizes, max_length, padding):
    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(precision)  # the layers built next keep it
    model = kt.models.build_transformer(
        source.vocab_size, target.vocab_size, max_length=max_length, **sizes
    )
    keras.mixed_precision.set_global_policy("float32")
    model.compile(
        optimizer=kt.training.make_optimizer(sizes["d_model"], warmup_steps=500),
        loss=kt.training.MaskedSparseCategoricalCrossentropy(label_smoothing=0.1),
        jit_compile=xla,
    )
    dataset = kt.data.make_dataset(
        pairs,
        source,
        target,
        batch_size=batch_size,
        max_length=max_length,
        shuffle=True,
        drop_remainder=True,
        pad_to_bucket=padding == "bucket",
    ).repeat()
    return model, iter(dataset)


def run_chunk(model, batches, steps):
    """Seconds and target tokens of `steps` training steps."""
    tokens, start = 0, time.perf_counter()
    for _ in range(steps):
        inputs, labels = next(batches)
        model.train_on_batch(inputs, labels)
        tokens += int(np.count_nonzero(labels))
    return time.perf_counter() - start, tokens


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a pairs.tsv (benchmarks/real_corpora.py)")
    parser.add_argument("--pairs", type=int, default=20000, help="training pairs used")
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--xla", nargs="+", choices=("off", "on"), default=["off"])
    parser.add_argument(
        "--precision", nargs="+", choices=("float32", "mixed_bfloat16"), default=["float32"]
    )
    parser.add_argument(
        "--padding",
        nargs="+",
        choices=("bucket", "batch"),
        default=["bucket"],
        help="pad to the bucket boundary (powers of two) or to the batch's longest pair "
        "(make_dataset pad_to_bucket=False)",
    )
    parser.add_argument(
        "--model", default="2x64", help="LAYERSxWIDTH, d_ff 4 x width, 4 heads (default 2x64)"
    )
    parser.add_argument("--steps", type=int, default=40, help="steps per variant per round")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, default=3500)
    parser.add_argument("--max-length", type=int, default=32)
    args = parser.parse_args(argv)

    pairs = read_tsv(args.data)[: args.pairs]
    source = kt.data.WordPieceTokenizer.learn([s for s, _ in pairs], args.vocab_size)
    target = kt.data.WordPieceTokenizer.learn([t for _, t in pairs], args.vocab_size)
    layers, width = (int(n) for n in args.model.split("x"))
    sizes = {"num_layers": layers, "d_model": width, "num_heads": 4, "dff": 4 * width}
    print(f"{len(pairs)} pairs, vocabularies {source.vocab_size} / {target.vocab_size}, {sizes}")
    names = [
        (b, x == "on", p, pad)
        for pad in args.padding
        for p in args.precision
        for x in args.xla
        for b in args.batches
    ]
    built = {
        name: variant(
            pairs,
            source,
            target,
            batch_size=name[0],
            xla=name[1],
            precision=name[2],
            sizes=sizes,
            max_length=args.max_length,
            padding=name[3],
        )
        for name in names
    }
    for model, batches in built.values():  # compile every bucket shape before timing
        run_chunk(model, batches, 12)
    rates = {name: [] for name in names}
    for round_ in range(args.repeats):
        for name, (model, batches) in built.items():
            seconds, tokens = run_chunk(model, batches, args.steps)
            rates[name].append(tokens / seconds)
        print(f"round {round_ + 1}: " + ", ".join(f"{r[-1]:.0f}" for r in rates.values()))
    first = statistics.median(rates[names[0]])
    print(
        "\n| batch | XLA | precision | padding | target tokens / s (median) | ratio |\n"
        "|---:|---|---|---|---:|---:|"
    )
    for name in names:
        median = statistics.median(rates[name])
        xla = "on" if name[1] else "off"
        print(
            f"| {name[0]} | {xla} | {name[2]} | {name[3]} | {median:,.0f} | {median / first:.2f}x |"
        )


if __name__ == "__main__":
    main()
