"""Follows one run's settings through the package: stays, places and returns.

Runs a small `keras-transformer train` (or the command given after `--`) under
`sys.setprofile` and records, in call order, every function of the package that receives the
run's settings: a `TrainConfig` / `PretrainConfig`, the `RunPlan`, or an object holding one
(`self.plan`, `self.settings`). Consecutive calls in one module are one *stay*; *places* are the
distinct modules; a *return* is a stay in a module already left before. This is how a reader
following the settings from `train` moves through the code (issue 50: at most 30 stays and 15
returns). Run it from a checkout (`PYTHONPATH=<checkout>`) to compare two commits side by side:

    python benchmarks/settings_trail.py
    python benchmarks/settings_trail.py --show            # the trail itself, one stay a line
    python benchmarks/settings_trail.py -- train --task numbers --architecture encoder ...

A command that makes several runs (`pretrain` with its fine-tuning: three `train` runs) gets a
line per run, each run's own settings, then the line of the whole job.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

DEFAULT = [
    "train",
    "--task",
    "numbers",
    "--num-train",
    "128",
    "--num-validation",
    "32",
    "--num-test",
    "32",
    "--epochs",
    "1",
    "--num-layers",
    "1",
    "--d-model",
    "16",
    "--num-heads",
    "2",
    "--dff",
    "32",
    "--jit-compile",
    "off",
]


def _settings_of(value, kinds):
    """The config `value` carries (itself, a plan's, or that of an object holding one), or None."""
    if not isinstance(value, kinds):
        holder = getattr(value, "__dict__", None) or {}
        value = next(
            (holder[k] for k in ("plan", "settings") if isinstance(holder.get(k), kinds)), None
        )
    return getattr(value, "settings", None) if not isinstance(value, kinds[0]) else value


def trail(argv: list[str]) -> list[tuple[str, str, int]]:
    """`(module, function, run)` of each call that receives the settings, in call order; `run`
    numbers the configs met (a `pretrain` job is three `train` runs, each with its own)."""
    from keras_transformer import cli
    from keras_transformer.training.config import TrainConfig

    try:  # an older checkout has no plan: the config alone is the settings
        from keras_transformer.training.plan import RunPlan

        kinds = (TrainConfig, RunPlan)
    except ImportError:
        kinds = (TrainConfig,)
    calls: list[tuple[str, str, int]] = []
    runs: dict[int, int] = {}  # id(config) -> its number

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("keras_transformer.") or frame.f_code.co_name == "<genexpr>":
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        for name in names:
            config = _settings_of(frame.f_locals.get(name), kinds)
            if config is not None:
                run = runs.setdefault(id(config), len(runs) + 1)
                calls.append((module, code.co_name, run))
                break

    sys.setprofile(profile)
    try:
        code = cli.main(argv)
    finally:
        sys.setprofile(None)
    if code != 0:
        raise SystemExit(f"the run failed (exit {code})")
    return calls


def stays(calls) -> list[tuple[str, list[str]]]:
    """Consecutive calls in one module merged: `(module, [functions])`."""
    merged: list[tuple[str, list[str]]] = []
    for module, function, *_ in calls:
        if merged and merged[-1][0] == module:
            merged[-1][1].append(function)
        else:
            merged.append((module, [function]))
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print the trail, one stay a line")
    parser.add_argument("command", nargs="*", help="the command (after --); default: a tiny run")
    args = parser.parse_args()
    argv = args.command or DEFAULT
    with tempfile.TemporaryDirectory() as out:
        if "--out" not in argv:
            argv = [*argv, "--out", os.path.join(out, "run")]
        calls = trail(argv)
    numbers = sorted({run for *_, run in calls})
    if len(numbers) > 1:  # each run's own settings, then the whole job's
        for run in numbers:
            own = stays([call for call in calls if call[2] == run])
            print(f"run {run}: " + _count(own, False))
    print(("all runs: " if len(numbers) > 1 else "") + _count(stays(calls), args.show))


def _count(merged, show: bool) -> str:
    seen, returns = set(), 0
    for number, (module, functions) in enumerate(merged, 1):
        returned = module in seen
        returns += returned
        seen.add(module)
        if show:
            mark = "back to " if returned else ""
            names = ", ".join(dict.fromkeys(functions))
            print(f"{number:3d} {mark}{module.removeprefix('keras_transformer.')}: {names}")
    return f"stays {len(merged)}, places {len(seen)}, returns {returns}"


if __name__ == "__main__":
    main()
