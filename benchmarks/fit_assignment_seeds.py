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
import json
import os
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from keras_transformer.course import nbgrader_course  # noqa: E402

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
    notebook = nbformat.read(path, as_version=4)
    return [c.source for c in notebook.cells if c.cell_type == "code"]


SCORE = """
import json
from keras_transformer.course import fit_checks
_score = fit_checks.exact_match(model, test_source, test_targets, START, END)
print(json.dumps({"score": float(_score), "seconds": _fit_seconds}))
"""


def run(variant: str, seed: int) -> tuple[float, float]:
    """(held-out exact match, seconds of training) of one variant and seed: the assignment's
    cells, the mistake switched in, run top to bottom in a fresh kernel as the grader runs them."""
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
    train = f"import time\n_fit_started = time.perf_counter()\n{train}\n"
    train += "_fit_seconds = time.perf_counter() - _fit_started\n"
    cells = [setup, build, fit, train]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.cells.append(nbformat.v4.new_code_cell(SCORE))
    NotebookClient(notebook, timeout=900, kernel_name="python3").execute()
    printed = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    result = json.loads(printed.strip().splitlines()[-1])
    return result["score"], result["seconds"]


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
