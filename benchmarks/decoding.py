"""Greedy decoding speed with and without the key/value cache, with and without XLA.

Generates exactly N tokens per sentence for each N in `--lengths` and batch size
in `--batches`, with the default architecture of `keras-transformer train`
(2 layers, d_model 128, 4 heads, dff 256; vocabularies of 2000) and random
weights whose reserved-token logits (`[END]` among them) are set to -1e9, so
every run generates exactly N tokens (N words).
It reports generated tokens per second and how much faster the cached decoder
is than each uncached one. Two paths are timed:

- `search`: the ids -> ids `greedy_search` in one `tf.function` (the decoding
  loop alone, source ids given);
- `translator`: `Translator(texts)`, strings in, strings out: what
  `keras-transformer translate [--no-cache] [--jit-compile]` runs
  (tokenization, the loop and detokenization; XLA compiles the loop only).

The uncached decoders, honestly labelled:

- `uncached (prefix)`: at step t the decoder re-runs on the t + 1 tokens
  generated so far (O(t) positions, the fair plain baseline);
- `uncached (full buffer)`: the decoder re-runs on the whole `max_length`
  buffer at every step (O(max_length) positions; causal masking makes the
  positions after t irrelevant, but they are still computed). XLA needs static
  shapes, so this is the only uncached decoder it can compile: under XLA the
  cached/uncached ratio is inflated by the wasted positions.

The last lines compare the fastest cached configuration with the fastest
uncached one (any XLA setting) per path. Each function is traced (and
compiled) once before timing; the median of `--repeats` runs is reported.
Everything runs in this one process on whatever device TensorFlow picks.

With `--run-dir RUN`, it times instead what a Python user gets from a trained
run: `Translator.from_run_dir(RUN)` with its defaults (cache on,
`jit_compile="auto"`, as `keras-transformer translate`) against
`from_run_dir(RUN, use_cache=False)` (XLA only on a GPU), on `--batches` texts
at a time (the longest of 50 times as many numbers task sentences, ~15 target
tokens in English, or the first lines of `--texts`),
checks that both give the same translations and prints the ratio.

    python benchmarks/decoding.py [--lengths 64] [--batches 1] [--xla off on]
        [--paths search translator] [--repeats 3] [--json decoding.json]
    python benchmarks/decoding.py --run-dir RUN [--batches 8] [--texts FILE]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from keras_transformer.data import WordPieceTokenizer, load_task  # noqa: E402
from keras_transformer.data.text.tokenizer import RESERVED_TOKENS  # noqa: E402
from keras_transformer.inference import IncrementalDecoder, Translator, greedy_search  # noqa: E402
from keras_transformer.models import build_transformer  # noqa: E402
from keras_transformer.training.config import TrainConfig  # noqa: E402

VOCAB = 2000
SOURCE_WORDS = 14  # + [START] and [END]: source length 16
DECODERS = {  # name -> (use_cache, static_shapes)
    "cached": (True, False),
    "uncached (prefix)": (False, False),
    "uncached (full buffer)": (False, True),
}


def median_seconds(function, repeats: int) -> float:
    function()  # trace, compile and warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_search(model, source, new_tokens, decoder_name, jit, repeats) -> float:
    use_cache, static = DECODERS[decoder_name]
    static = static or bool(jit)  # XLA compiles fixed shapes only
    decoder = IncrementalDecoder(model, new_tokens + 1, use_cache=use_cache, static_shapes=static)
    search = tf.function(
        lambda s: greedy_search(decoder, s, start_id=2, end_id=3), jit_compile=jit or None
    )

    def run():
        out = search(source).numpy()
        assert out.shape == (source.shape[0], new_tokens) and (out != 0).all()

    return median_seconds(run, repeats)


def time_translator(model, tokenizer, texts, new_tokens, use_cache, jit, repeats) -> float:
    translator = Translator(
        model,
        tokenizer,
        tokenizer,
        max_length=new_tokens + 1,
        use_cache=use_cache,
        jit_compile=jit,
    )

    def run():
        out = translator(texts)
        assert len(out) == len(texts) and all(len(t.split()) == new_tokens for t in out)

    return median_seconds(run, repeats)


def time_run_dir(run_dir: str, texts: list[str], batches: list[int], repeats: int) -> list:
    """`from_run_dir` defaults vs `use_cache=False`: seconds per batch, same outputs."""
    cached = Translator.from_run_dir(run_dir)
    uncached = Translator.from_run_dir(run_dir, use_cache=False)
    print(
        f"run {run_dir}: cached XLA {'on' if cached.jit_compile else 'off'}, "
        f"uncached XLA {'on' if uncached.jit_compile else 'off'} (jit_compile='auto')"
    )
    rows = []
    for batch in batches:
        chosen = texts[:batch]
        if cached(chosen) != uncached(chosen):
            raise AssertionError(f"batch {batch}: the cache changed the translations")
        tokens = float((cached.translate_tokens(chosen) > 0).sum(axis=1).mean())  # with [END]
        times = {"cached": [], "uncached": []}  # interleaved: a load spike hits both
        for _ in range(repeats):
            for name, translator in (("cached", cached), ("uncached", uncached)):
                start = time.perf_counter()
                translator(chosen)
                times[name].append(time.perf_counter() - start)
        median = {name: statistics.median(values) for name, values in times.items()}
        best = {name: min(values) for name, values in times.items()}
        row = {
            "batch": batch,
            "target_tokens": round(tokens, 1),
            "cached_s": median["cached"],
            "uncached_s": median["uncached"],
            "speedup": round(median["uncached"] / median["cached"], 2),
            "speedup_of_minima": round(best["uncached"] / best["cached"], 2),
        }
        print(
            f"  batch {batch:>3}, {tokens:4.1f} target tokens: cached {median['cached'] * 1e3:7.1f}"
            f" ms, uncached {median['uncached'] * 1e3:7.1f} ms (medians of {repeats}): cached "
            f"is {row['speedup']:.2f}x ({row['speedup_of_minima']:.2f}x by the fastest runs), "
            f"same translations"
        )
        rows.append(row)
    return rows


def run_dir_texts(run_dir: str, texts_file: str | None, count: int) -> list[str]:
    if texts_file:
        with open(texts_file, encoding="utf-8") as handle:
            return [line.rstrip("\r\n") for line in handle][:count]
    with open(os.path.join(run_dir, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    if config.get("task") != "numbers":
        raise SystemExit(f"--run-dir {run_dir}: its task is {config.get('task')!r}; pass --texts")
    task = load_task(
        "numbers",
        source_lang=config["source_lang"],
        target_lang=config["target_lang"],
        num_train=1,
        num_validation=1,
        num_test=50 * count,
        seed=1,
    )
    return sorted((source for source, _ in task.test), key=len, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 64, 128])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--xla", nargs="+", choices=["off", "on"], default=["off", "on"])
    parser.add_argument(
        "--paths", nargs="+", choices=["search", "translator"], default=["search", "translator"]
    )
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument(
        "--run-dir",
        default=None,
        help="time Translator.from_run_dir(RUN) defaults vs use_cache=False",
    )
    parser.add_argument("--texts", default=None, help="with --run-dir: one source per line")
    args = parser.parse_args()
    tf.get_logger().setLevel("ERROR")  # each timed function is traced once, on purpose
    logging.getLogger("keras_transformer").setLevel(logging.ERROR)  # truncation of short N
    if args.run_dir:
        texts = run_dir_texts(args.run_dir, args.texts, max(args.batches))
        rows = time_run_dir(args.run_dir, texts, args.batches, args.repeats)
        if args.json:
            with open(args.json, "w") as handle:
                json.dump({"run_dir": rows}, handle, indent=2)
        return

    cfg = TrainConfig()
    model = build_transformer(
        VOCAB,
        VOCAB,
        num_layers=cfg.num_layers,
        d_model=cfg.d_model,
        num_heads=cfg.num_heads,
        dff=cfg.dff,
        max_length=max(max(args.lengths) + 1, SOURCE_WORDS + 2),
    )
    kernel, bias = model.get_layer("logits").get_weights()
    bias[: len(RESERVED_TOKENS)] = -1e9  # no [END] (nor other reserved id): exactly N words
    model.get_layer("logits").set_weights([kernel, bias])
    words = [f"w{i}" for i in range(VOCAB - len(RESERVED_TOKENS))]
    tokenizer = WordPieceTokenizer([*RESERVED_TOKENS, *words])
    rng = np.random.default_rng(0)

    device = tf.config.list_physical_devices("GPU") or ["CPU"]
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"TensorFlow {tf.__version__}, device {getattr(device[0], 'name', device[0])}, "
        f"median of {args.repeats}"
    )
    header = (
        f"{'tokens':>6} {'batch':>5}  {'path':<10} {'XLA':<3}  {'decoder':<22} "
        f"{'ms':>9} {'tok/s':>9} {'cached is':>10}"
    )
    print(header)
    rows = []
    for new_tokens in args.lengths:
        for batch in args.batches:
            source = rng.integers(len(RESERVED_TOKENS), VOCAB, size=(batch, SOURCE_WORDS + 2))
            source[:, 0], source[:, -1] = 2, 3
            source = tf.constant(source, tf.int32)
            texts = [
                " ".join(rng.choice(words, SOURCE_WORDS).tolist()) for _ in range(batch)
            ]  # (batch,) strings of 14 tokens
            for path in args.paths:
                for xla in args.xla:
                    jit = xla == "on"
                    names = ["cached", "uncached (prefix)", "uncached (full buffer)"]
                    if jit:  # XLA cannot compile the prefix's growing shape
                        names.remove("uncached (prefix)")
                    elif path == "translator":  # the Translator's plain path is the prefix
                        names.remove("uncached (full buffer)")
                    group = []
                    for name in names:
                        if path == "search":
                            seconds = time_search(
                                model, source, new_tokens, name, jit, args.repeats
                            )
                        else:
                            use_cache = name == "cached"
                            seconds = time_translator(
                                model, tokenizer, texts, new_tokens, use_cache, jit, args.repeats
                            )
                        row = {
                            "new_tokens": new_tokens,
                            "batch": batch,
                            "path": path,
                            "xla": jit,
                            "decoder": name,
                            "seconds": round(seconds, 5),
                            "tokens_per_second": round(batch * new_tokens / seconds, 1),
                        }
                        group.append(row)
                    cached = group[0]["seconds"]
                    for row in group:
                        row["cached_speedup"] = round(row["seconds"] / cached, 2)
                        print(
                            f"{new_tokens:>6} {batch:>5}  {path:<10} {xla:<3}  "
                            f"{row['decoder']:<22} {row['seconds'] * 1000:>9.1f} "
                            f"{row['tokens_per_second']:>9.0f} {row['cached_speedup']:>9.2f}x"
                        )
                    rows.extend(group)
    print("\nfastest cached vs fastest uncached (any XLA setting, same path, tokens, batch):")
    summary = []
    for new_tokens in args.lengths:
        for batch in args.batches:
            for path in args.paths:
                same = [
                    r
                    for r in rows
                    if (r["new_tokens"], r["batch"], r["path"]) == (new_tokens, batch, path)
                ]
                cached = min(
                    (r for r in same if r["decoder"] == "cached"), key=lambda r: r["seconds"]
                )
                plain = min(
                    (r for r in same if r["decoder"] != "cached"), key=lambda r: r["seconds"]
                )
                ratio = round(plain["seconds"] / cached["seconds"], 2)
                summary.append(
                    {
                        "new_tokens": new_tokens,
                        "batch": batch,
                        "path": path,
                        "speedup": ratio,
                        "cached": f"XLA {'on' if cached['xla'] else 'off'}",
                        "uncached": f"{plain['decoder']}, XLA {'on' if plain['xla'] else 'off'}",
                    }
                )
                print(
                    f"  {new_tokens:>4} tokens, batch {batch:>3}, {path:<10}: {ratio:5.2f}x "
                    f"(cached with XLA {'on' if cached['xla'] else 'off'} vs {plain['decoder']} "
                    f"with XLA {'on' if plain['xla'] else 'off'})"
                )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "summary": summary}, handle, indent=2)


if __name__ == "__main__":
    main()
