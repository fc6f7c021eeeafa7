"""How the graded `model.fit` assignment scores the reference and three classic mistakes, per seed.

Runs the code cells of the shipped assignment (`keras_transformer/course/assignments/
fit_a_transformer.ipynb`) as the grader does, with the reference answers and with each mistake
switched in, for several seeds of `keras.utils.set_random_seed` (the cell that trains), and
prints the held-out exact match the checker computes: mean, min and max per variant, and the
seconds `model.fit` took. docs/teaching.md quotes the table; the pass mark is chosen from it.

    python benchmarks/fit_assignment_seeds.py --seeds 0 1 2 3 4
    python benchmarks/fit_assignment_seeds.py --seeds 0 --variants reference "no padding mask"
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402

from keras_transformer.course import fit_checks, nbgrader_course  # noqa: E402

DECODER = """    y = kt.layers.DecoderLayer(num_heads, dff, dropout=0.0, name="decoder")(
        y, x, padding_mask=target_mask, context_padding_mask=source_mask
    )"""
# {variant: [(the text of the reference answer, what the mistake writes instead)]}
MISTAKES = {
    "reference": [],
    "no causal mask": [
        (
            DECODER,
            '    y = kt.layers.SelfAttention(num_heads, dropout=0.0, name="self_attention")'
            "(y, padding_mask=target_mask)\n"
            '    y = kt.layers.CrossAttention(num_heads, dropout=0.0, name="cross_attention")'
            "(y, x, context_padding_mask=source_mask)\n"
            '    y = kt.layers.FeedForwardBlock(dff, dropout=0.0, name="feed_forward")(y)',
        )
    ],
    "no padding mask": [
        ("(x, padding_mask=source_mask)", "(x)"),
        (", context_padding_mask=source_mask", ""),
    ],
    "loss counts padding": [("ignore_class=PAD", "ignore_class=None")],
}


def code_cells() -> list[str]:
    path = nbgrader_course.graded_assignments_dir() / "fit_a_transformer.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


def run(variant: str, seed: int) -> tuple[float, float]:
    """(held-out exact match, seconds of training) of one variant and seed."""
    setup, build, fit, train, check = code_cells()
    for old, new in MISTAKES[variant]:
        if old in build:
            build = build.replace(old, new)
        elif old in fit:
            fit = fit.replace(old, new)
        else:
            raise ValueError(f"{variant}: {old!r} is in no answer cell")
    seeded = "keras.utils.set_random_seed(0)"
    if seeded not in train:
        raise ValueError(f"the training cell no longer seeds with {seeded!r}")
    train = train.replace(seeded, f"keras.utils.set_random_seed({seed})")
    train = train.replace("verbose=2", "verbose=0")
    keras.backend.clear_session()
    scope: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):  # the cells' own prints
        for cell in (setup, build, fit.replace("verbose=2", "verbose=0")):
            exec(cell, scope)  # noqa: S102 (the assignment's own cells)
        start = time.perf_counter()
        exec(train, scope)  # noqa: S102
        seconds = time.perf_counter() - start
    score = fit_checks.exact_match(
        scope["model"], scope["test_source"], scope["test_targets"], scope["START"], scope["END"]
    )
    return score, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--variants", nargs="+", default=list(MISTAKES), choices=list(MISTAKES))
    args = parser.parse_args()
    rows = []
    for variant in args.variants:
        scores, seconds = [], []
        for seed in args.seeds:
            score, took = run(variant, seed)
            print(f"{variant}, seed {seed}: exact match {score:.3f}, fit {took:.0f} s", flush=True)
            scores.append(score)
            seconds.append(took)
        rows.append((variant, scores, seconds))
    print("\n| submission | exact match, mean | min | max | per seed | model.fit (s) |")
    print("|---|---|---|---|---|---|")
    for variant, scores, seconds in rows:
        each = " ".join(f"{s:.3f}" for s in scores)
        print(
            f"| {variant} | {statistics.mean(scores):.3f} | {min(scores):.3f} | "
            f"{max(scores):.3f} | {each} | {statistics.median(seconds):.0f} |"
        )


if __name__ == "__main__":
    main()
