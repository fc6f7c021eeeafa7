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


def _carries_settings(value, kinds) -> bool:
    if isinstance(value, kinds):
        return True
    holder = getattr(value, "__dict__", None)
    return bool(holder) and any(isinstance(holder.get(k), kinds) for k in ("plan", "settings"))


def trail(argv: list[str]) -> list[tuple[str, str]]:
    """`(module, function)` of each call that receives the settings, in call order."""
    from keras_transformer import cli
    from keras_transformer.training.config import TrainConfig

    try:  # an older checkout has no plan: the config alone is the settings
        from keras_transformer.training.plan import RunPlan

        kinds = (TrainConfig, RunPlan)
    except ImportError:
        kinds = (TrainConfig,)
    calls: list[tuple[str, str]] = []

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("keras_transformer.") or frame.f_code.co_name == "<genexpr>":
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if any(_carries_settings(frame.f_locals.get(name), kinds) for name in names):
            calls.append((module, code.co_name))

    sys.setprofile(profile)
    try:
        code = cli.main(argv)
    finally:
        sys.setprofile(None)
    if code != 0:
        raise SystemExit(f"the run failed (exit {code})")
    return calls


def stays(calls: list[tuple[str, str]]) -> list[tuple[str, list[str]]]:
    """Consecutive calls in one module merged: `(module, [functions])`."""
    merged: list[tuple[str, list[str]]] = []
    for module, function in calls:
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
        merged = stays(trail(argv))
    seen, returns = set(), 0
    for number, (module, functions) in enumerate(merged, 1):
        returned = module in seen
        returns += returned
        seen.add(module)
        if args.show:
            mark = "back to " if returned else ""
            names = ", ".join(dict.fromkeys(functions))
            print(f"{number:3d} {mark}{module.removeprefix('keras_transformer.')}: {names}")
    print(f"stays {len(merged)}, places {len(seen)}, returns {returns}")


if __name__ == "__main__":
    main()
