"""`keras-transformer compare`: measure Transformers against RNNs and CNNs, write a report.

Writes `comparison.json`, `comparison.md` and `plots/*.png` to `--out`:
the analytic complexity table of the paper, the same quantities measured on
Keras layers (parameters, traced FLOPs, sequential steps), gradient norms
against distance, forward + backward timings against length, and the
long-range recall accuracy of a Transformer, an RNN and a CNN.
"""

from __future__ import annotations

import os
import time


def register(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="measure the Transformer-versus-RNN complexity table and write a report",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("--out", default="runs/comparison", help="output directory")
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="smaller sizes: a few minutes on a 2-core CPU"
    )
    size.add_argument(
        "--size",
        choices=("tiny", "quick", "full"),
        default=None,
        help="tiny (seconds, for tests), quick (= --quick) or full (default, < 20 min on 2 cores)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the long-range experiment")
    p.set_defaults(func=_compare)


def _compare(args) -> int:
    import tensorflow as tf

    from keras_transformer.analysis.report import run_comparison, write_comparison

    # Every layer and model measured here traces its own tf.function; TensorFlow's
    # "excessive retracing" notes are expected and would drown the progress lines.
    tf.get_logger().setLevel("ERROR")

    size = args.size or ("quick" if args.quick else "full")
    out = args.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise FileExistsError(f"--out {out} exists and is not a directory; pass another --out")
    start = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f}s] {message}", flush=True)

    results = run_comparison(size, seed=args.seed, progress=progress)
    paths = write_comparison(results, out)
    print(f"wrote {paths['json']}, {paths['markdown']} and {len(paths) - 2} plots")
    grad = results["gradients"]["curves"]
    print(
        "gradient norm ratio (farthest / distance 1): "
        + ", ".join(f"{kind} {curve['decay_ratio']:.3g}" for kind, curve in grad.items())
    )
    fit = results["timing"]["self_attention_fit"]["quadratic_overtakes_linear_at"]
    print(
        "attention time: T^2 term overtakes the linear term from T = "
        + (f"{fit:.0f}" if fit else "- (no positive quadratic fit)")
    )
    lr = results["long_range"]
    for name, accuracy in lr["accuracy"].items():
        pairs = ", ".join(f"{n}: {a:.2f}" for n, a in zip(lr["distances"], accuracy, strict=True))
        print(f"recall accuracy {name}: {pairs}")
    load = results["environment"].get("load_average")
    print(
        f"total {time.perf_counter() - start:.1f}s"
        + (f" (load average {load} on {os.cpu_count()} cores at the start)" if load else "")
    )
    return 0
