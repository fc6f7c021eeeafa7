"""How close `keras-transformer train --time-budget B` ends to B, timed as a user times it.

Each budget runs the whole command in a fresh process (`python -m keras_transformer train`,
as `time keras-transformer train ...` would), into a temporary run directory, and prints the
wall time measured from outside against the budget, with the parts `metrics.json` records
(setup, training, evaluation) and what the run learnt (epochs, exact match, chrF).

    python benchmarks/time_budget.py [--task numbers] [--budgets 30s 60s] [-- extra train flags]

The goal (issue 38): within 10 % of the budget, or 15 s for budgets under 2 minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def allowed_seconds(budget: float) -> float:
    """How far from the budget a run may end: 10 %, or 15 s under 2 minutes."""
    return 15.0 if budget < 120 else 0.1 * budget


def run_budget(task: str, budget: str, extra: list[str], out: str) -> dict:
    """Runs one budgeted `train`; returns the outside wall and CPU seconds and `metrics.json`."""
    argv = [sys.executable, "-m", "keras_transformer", "train", "--task", task]
    argv += ["--time-budget", budget, "--out", out, *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    metrics_path = os.path.join(out, "metrics.json")
    metrics = json.load(open(metrics_path)) if os.path.isfile(metrics_path) else {}
    return {
        "wall": wall,
        "cpu": cpu,
        "status": result.returncode,
        "stderr": result.stderr,
        "metrics": metrics,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="numbers")
    parser.add_argument("--budgets", nargs="+", default=["30s", "60s"])
    parser.add_argument("extra", nargs="*", help="more `train` flags (after --)")
    args = parser.parse_args(argv)
    from keras_transformer._validation import parse_duration

    print(f"{os.cpu_count()} CPUs, load {tuple(round(x, 1) for x in os.getloadavg())}")
    for budget in args.budgets:
        seconds = parse_duration(budget)
        with tempfile.TemporaryDirectory() as tmp:
            found = run_budget(args.task, budget, args.extra, os.path.join(tmp, "run"))
        m = found["metrics"]
        off = found["wall"] - seconds
        verdict = "within" if abs(off) <= allowed_seconds(seconds) else "OUTSIDE"
        print(
            f"--time-budget {budget}: exit {found['status']}, wall {found['wall']:.1f} s "
            f"({off:+.1f} s, {verdict} +-{allowed_seconds(seconds):.0f} s), "
            f"CPU {found['cpu']:.1f} s"
        )
        if m:
            print(
                f"    metrics.json: wall {m.get('wall_seconds')} s = setup "
                f"{m.get('setup_seconds')} + training {m.get('train_seconds')} + evaluation "
                f"{m.get('evaluation_seconds')} (+ saving, plots); epochs {m.get('epochs_run')}, "
                f"stopped by the budget {m.get('stopped_by_time_budget')}, exact match "
                f"{m.get('test_exact_match')}, chrF {m.get('test_chrf')}"
            )
        lines = [
            line for line in found["stderr"].splitlines() if "warning" in line or "error" in line
        ]
        for line in lines:
            print(f"    {line}")


if __name__ == "__main__":
    main()
