"""`keras-transformer compare`: measure Transformers against RNNs and CNNs, write a report."""

import os
import time

from keras_transformer.choices import COMPARISON_SIZES


def register(sub) -> None:
    p = sub.add_parser(
        "compare",
        description=__doc__.splitlines()[0],
        help="measure the Transformer-versus-RNN complexity table and write a report",
    )
    p.add_argument("--out", default="runs/comparison", help="output directory")
    size = p.add_mutually_exclusive_group()
    size.add_argument(
        "--quick", action="store_true", help="smaller sizes: a few minutes on a 2-core CPU"
    )
    size.add_argument(
        "--size",
        choices=COMPARISON_SIZES,
        default=None,
        help="tiny (seconds, for tests), quick (= --quick) or full (default, < 20 min on 2 cores)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the long-range experiment")
    p.set_defaults(func=_compare)


def _compare(args) -> int:
    """Runs the comparison, writes it, prints the headline figures."""
    import tensorflow as tf

    from keras_transformer.analysis.comparison import (
        fit_crossover_phrase,
        run_comparison,
        write_comparison,
    )

    # Every layer and model here traces its own tf.function; TensorFlow's "excessive
    # retracing" notes are expected and would drown the progress lines.
    tf.get_logger().setLevel("ERROR")
    size, out = args.size or ("quick" if args.quick else "full"), args.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise FileExistsError(f"--out {out} exists and is not a directory; pass another --out")
    start = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f}s] {message}", flush=True)

    results = run_comparison(size, seed=args.seed, progress=progress)
    paths = write_comparison(results, out)
    print(f"wrote {paths['json']}, {paths['markdown']} and {len(paths) - 2} plots")
    grad = results["gradients"]["curves"]
    ratios = ", ".join(f"{kind} {curve['decay_ratio']:.3g}" for kind, curve in grad.items())
    print(f"gradient norm ratio (farthest / distance 1): {ratios}")
    timing = results["timing"]
    fit = timing["self_attention_fit"]["quadratic_overtakes_linear_at"]
    # said only within the measured lengths: a fit tells nothing outside them
    print(f"attention time a + bT + cT^2: {fit_crossover_phrase(timing['lengths'], fit)}")
    lr = results["long_range"]
    for name, accuracy in lr["accuracy"].items():
        pairs = ", ".join(f"{n}: {a:.2f}" for n, a in zip(lr["distances"], accuracy, strict=True))
        print(f"recall accuracy {name}: {pairs}")
    load = results["environment"].get("load_average")
    note = f" (load average {load} on {os.cpu_count()} cores at the start)" if load else ""
    print(f"total {time.perf_counter() - start:.1f}s{note}")
    return 0
