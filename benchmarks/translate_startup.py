"""Where `keras-transformer translate RUN "text"` spends its time before the first output.

Two measurements, each in fresh processes (nothing warm):

- `stages`: one process times its own stages in order: Python start-up to `main` (read from
  /proc), importing the package's command line, importing TensorFlow (quietly, as the command
  does), `Translator.from_run_dir` (Keras loads model.keras and the vocabularies), the first
  translation (tracing, and XLA compiling when on) and a second one (the steady cost);
- `command`: the wall time of the whole `keras-transformer translate RUN TEXT` command, as a
  user runs it (`--jit-compile auto`, `on` and `off`), median of `--repeats`.

    python benchmarks/translate_startup.py RUN_DIR [--text "one two three"] [--repeats 3]

It prints one line per stage and per command; nothing is written.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

STAGES = r"""
import json, os, resource, sys, time
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
c0, t0 = cpu(), time.time()
from keras_transformer.training.wallclock import process_start_time
started = process_start_time() or t0
from keras_transformer import cli  # noqa: F401
c1, t1 = cpu(), time.time()
from keras_transformer._quiet import import_tensorflow_quietly, quiet_native_logs
quiet_native_logs(force=True)
import_tensorflow_quietly()
c2, t2 = cpu(), time.time()
from keras_transformer.inference.translator import Translator
translator = Translator.from_run_dir(sys.argv[1], jit_compile=sys.argv[3])
c3, t3 = cpu(), time.time()
translator([sys.argv[2]])
c4, t4 = cpu(), time.time()
translator([sys.argv[2]])
c5, t5 = cpu(), time.time()
print(json.dumps({
    "python start-up": (t0 - started, c0),
    "import keras_transformer.cli": (t1 - t0, c1 - c0),
    "import tensorflow": (t2 - t1, c2 - c1),
    "load the run": (t3 - t2, c3 - c2),
    "first translation": (t4 - t3, c4 - c3),
    "second translation": (t5 - t4, c5 - c4),
    "total to first output": (t4 - started, c4),
}))
"""


def stages(run_dir: str, text: str, jit: str) -> dict[str, list[float]]:
    """`{stage: [wall seconds, CPU seconds]}` of one fresh process (`STAGES`)."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    result = subprocess.run(
        [sys.executable, "-c", STAGES, run_dir, text, jit],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def command_seconds(run_dir: str, text: str, jit: str) -> tuple[float, float]:
    """Wall and CPU seconds of `python -m keras_transformer translate RUN TEXT --jit-compile
    JIT` (CPU: user + system of the process, all threads: steadier on a shared machine)."""
    argv = [sys.executable, "-m", "keras_transformer", "translate", run_dir, text]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([*argv, "--jit-compile", jit], capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--text", default="three hundred and forty-two")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jit", nargs="+", default=["auto", "on", "off"])
    args = parser.parse_args(argv)
    print(f"run {args.run_dir}, text {args.text!r}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    print("medians of wall seconds (CPU seconds of the process, all threads)")
    for jit in args.jit:
        runs = [stages(args.run_dir, args.text, jit) for _ in range(args.repeats)]
        for name in runs[0]:
            wall = statistics.median(run[name][0] for run in runs)
            cpu = statistics.median(run[name][1] for run in runs)
            print(f"stages  --jit-compile {jit:4}  {name:30} {wall:6.2f} s  ({cpu:5.2f} s CPU)")
    for jit in args.jit:
        runs = [command_seconds(args.run_dir, args.text, jit) for _ in range(args.repeats)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        shown = ", ".join(f"{w:.1f}" for w, _ in runs)
        print(
            f"command --jit-compile {jit:4}  translate RUN TEXT, whole   {wall:6.2f} s  "
            f"({cpu:5.2f} s CPU; runs: {shown})"
        )


if __name__ == "__main__":
    main()
