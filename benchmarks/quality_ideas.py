"""One idea at a time, at a fixed number of passes: what buys translation quality per CPU minute.

A time-budgeted run's score depends on how busy the machine is; this script takes the speed out
of the question. It trains `train --task tsv` for `--epochs` passes with the sizes pinned (the
2 x 64 rung and the vocabulary the budget rule chooses), one setting changed (`--set`, or
`--peak-lr`), keeps the weights of every epoch, and scores on the first `--limit` validation
pairs (the split `train --task tsv` makes, never the test split):

- the checkpoint `train` keeps (lowest validation loss), the last epoch, and the average of the
  last 2, 3 and 5 epochs' weights (checkpoint averaging, as the paper averages its last
  checkpoints);
- greedy search and beam search at several length penalties on each.

Speed is measured apart (`benchmarks/training.py`, `--batch-size` ratios in one process): the
passes a budget buys times what a pass is worth here gives the budget's score.

    python benchmarks/quality_ideas.py --data /tmp/corpora/anki-en-es/pairs.tsv --epochs 6 \\
        --out /tmp/qi/es_base
    python benchmarks/quality_ideas.py --data /tmp/corpora/anki-en-es/pairs.tsv --epochs 6 \\
        --peak-lr 2e-3 --out /tmp/qi/es_lr2e3

Prints one line per (weights, decoding) and writes `quality.json` in `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

TINY = dict(num_layers=2, d_model=64, num_heads=4, dff=256, vocab_size=3500)
"""The rung and vocabulary `train --task tsv --time-budget 10m` chooses on the Anki files."""


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def train_run(args) -> dict:
    import keras

    from keras_transformer.training import planning, run
    from keras_transformer.training.config import TrainConfig

    snapshots = os.path.join(args.out, "epochs")
    os.makedirs(snapshots, exist_ok=True)

    class Snapshot(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.model.save_weights(os.path.join(snapshots, f"{epoch + 1:03d}.weights.h5"))

    fit_run = run.fit_run

    def fit_with_snapshots(*a, callbacks=None, **k):
        return fit_run(*a, callbacks=[*(callbacks or []), Snapshot()], **k)

    run.fit_run = fit_with_snapshots
    if args.peak_lr is not None:
        planning.peak_learning_rate = lambda d_model: args.peak_lr
    settings = {**TINY, **{k: _value(v) for k, v in (s.split("=", 1) for s in args.set)}}
    config = TrainConfig(
        task="tsv",
        data=args.data,
        epochs=args.epochs,
        out=os.path.join(args.out, "run"),
        overwrite=True,
        seed=args.seed,
        **settings,
    )
    start = time.perf_counter()
    metrics = run.train(config)
    return {
        "settings": settings,
        "peak_lr": args.peak_lr,
        "train_seconds": metrics["train_seconds"],
        "wall_seconds": round(time.perf_counter() - start, 1),
        "epochs_run": metrics["epochs_run"],
        "parameters": metrics["parameters"],
        "test_bleu_greedy_train": metrics.get("test_bleu"),
    }


def average_weights(model, paths: list[str]) -> None:
    """Sets `model`'s weights to the mean of the weight files `paths`."""
    import numpy as np

    sums = None
    for path in paths:
        model.load_weights(path)
        weights = model.get_weights()
        sums = weights if sums is None else [s + w for s, w in zip(sums, weights, strict=True)]
    model.set_weights([np.asarray(s / len(paths), dtype=s.dtype) for s in sums])


def score_run(args, info: dict) -> dict:
    from real_corpora import score, translate_all

    from keras_transformer.data.tasks.tsv import tsv_task
    from keras_transformer.inference import Translator

    run_dir = os.path.join(args.out, "run")
    task = tsv_task(path=args.data, seed=0)
    pairs = task.validation[: args.limit]
    sources, references = [s for s, _ in pairs], [t for _, t in pairs]
    translator = Translator.from_run_dir(run_dir)
    model = translator.model
    folder = os.path.join(args.out, "epochs")
    snapshots = sorted(os.path.join(folder, name) for name in os.listdir(folder))
    weights = {"kept": [os.path.join(run_dir, "checkpoints", "best.weights.h5")]}
    weights["last"] = snapshots[-1:]
    for n in (2, 3, 5):
        if len(snapshots) >= n:
            weights[f"avg{n}"] = snapshots[-n:]
    decodings = [("greedy", 1, 0.6)] + [(f"beam4 a{a:g}", 4, a) for a in args.alphas]
    rows = {}
    for name, paths in weights.items():
        average_weights(model, paths)
        for decoding, beam, alpha in decodings:
            if decoding != "greedy" and name not in ("kept", args.beam_on):
                continue
            start = time.perf_counter()
            outputs = translate_all(translator, sources, beam_size=beam, alpha=alpha)
            row = score(outputs, references)
            row["decode_seconds"] = round(time.perf_counter() - start, 1)
            rows[f"{name} {decoding}"] = row
            print(
                f"{name:6s} {decoding:12s} BLEU {row['bleu']:6.2f} chrF {row['chrf']:6.2f} "
                f"len {row['length_ratio']:.3f} ({row['decode_seconds']} s)",
                flush=True,
            )
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a pairs.tsv (benchmarks/real_corpora.py)")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE")
    parser.add_argument("--peak-lr", type=float, default=None)
    parser.add_argument("--limit", type=int, default=1000, help="validation pairs scored")
    parser.add_argument("--alphas", type=float, nargs="*", default=[0.6, 1.0])
    parser.add_argument("--beam-on", default="avg3", help="which averaged weights get beams too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--score-only", action="store_true", help="score an existing --out")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    path = os.path.join(args.out, "quality.json")
    if args.score_only:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)["train"]
    else:
        info = train_run(args)
        print(json.dumps(info), flush=True)
    rows = score_run(args, info)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"train": info, "scores": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
