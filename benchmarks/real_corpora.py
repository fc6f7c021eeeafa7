"""Real sentences: `keras-transformer train --task tsv --time-budget` against the TF tutorial's recipe.

Two subcommands:

    # 1. write the corpora as TSV files (source<TAB>target), outside the repository
    python benchmarks/real_corpora.py prepare \\
        --mirror /path/to/seq2seq-meminf.git --out /tmp/corpora

    # 2. per corpus, train both recipes for the same wall-clock time, score the test split
    python benchmarks/real_corpora.py run --corpora /tmp/corpora \\
        --pairs en-de en-fr --budget 8m --out /tmp/corpora/results

    # trying a setting: score the validation split, ours only, one TrainConfig field changed
    python benchmarks/real_corpora.py run --corpora /tmp/corpora --pairs en-de --budget 5m \\
        --recipes ours --split validation --limit-test 300 --set vocab_size=1000 --out /tmp/try

The corpus is SATED (Speaker Annotated TED talks, Michel & Neubig, ACL 2018),
release 0.9.0, as kept in the git repository `mihirkhandekar/seq2seq-meminf`
(folder `sated-release-0.9.0/`). Only its `dev` and `test` files are in that
repository, so `prepare` pools them (6,680 en-de and 7,548 en-fr pairs, 16
English words a sentence on average) into one `pairs.tsv` per language pair.
The text was lower-cased and Moses-tokenised by its authors; `prepare` undoes
the tokenisation (entities, spaces before punctuation) so that the models read
and write text as a user types it.

`run` splits each file as `train --task tsv` does (`data.tsv_task`, seed 0:
80 % train, 10 % validation, 10 % test, by distinct source) and trains, one
after the other in this process, for the same wall-clock budget in `fit`:

- **ours**: `train(TrainConfig(task="tsv", data=..., time_budget=...))`, the
  command's defaults: sizes from the corpus (`data.sizing`), the warm-up and
  cosine decay shaped to the budget, the best validation checkpoint; decoded by
  `Translator.from_run_dir` (greedy, what `translate` does by default) and by
  beam search (size 4, alpha 0.6).
- **tutorial**: the TensorFlow tutorial "Neural machine translation with a
  Transformer and Keras": 4 layers, d_model 128, dff 512, 8 heads each
  `d_model` wide (`keras.layers.MultiHeadAttention(key_dim=d_model)`),
  dropout 0.1, its sinusoid `PositionalEmbedding`, masked loss and accuracy,
  `CustomSchedule(d_model, warmup_steps=4000)` with Adam(0.9, 0.98, 1e-9),
  batches of 64 padded to their longest sequence (at most 128 tokens), an
  8000-piece WordPiece vocabulary per language, greedy decoding. Padding
  masks are passed explicitly (the tutorial relies on Keras' implicit masks,
  which on Keras 3 let padding into attention: a correction in its favour).
  Its weights are those of the last epoch, as in the tutorial.

The test split is scored with sacrebleu (BLEU and chrF on the strings), with
two stutter measures: the share of outputs with a word repeated 3+ times in a
row, a word 2- or 3-gram repeated back to back, or a piece repeated 3+ times
inside a word; and the share of word 4-grams that occur earlier in the same
output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time

SATED_REPOSITORY = "mihirkhandekar/seq2seq-meminf"
SATED_FOLDER = "sated-release-0.9.0"

# --------------------------------------------------------------------------- prepare

_ENTITIES = {
    "&apos;": "'",
    "&quot;": '"',
    "&amp;": "&",
    "&lt;": "<",
    "&gt;": ">",
    "&#91;": "[",
    "&#93;": "]",
    "&#124;": "|",
}


def moses_detokenize(text: str, lang: str) -> str:
    """Undoes Moses tokenisation well enough for reading (entities, punctuation spacing).

    >>> moses_detokenize("that &apos;s our room , isn &apos;t it ?", "en")
    "that's our room, isn't it?"
    >>> moses_detokenize("c&apos; est ça : « oui » ?", "fr")
    "c'est ça : « oui » ?"
    >>> moses_detokenize('he said &quot; yes &quot; ( twice ) .', "en")
    'he said "yes" (twice).'
    """
    for entity, char in _ENTITIES.items():
        text = text.replace(entity, char)
    tokens = text.split()
    out: list[str] = []
    quote_open = False
    glue_next = False
    for token in tokens:
        glue = glue_next
        glue_next = False
        if token == '"':
            if quote_open:
                glue = True
            else:
                glue_next = True
            quote_open = not quote_open
        elif token in {",", ".", ")", "]", "}", "%", "...", "…"}:
            glue = True
        elif token in {"?", "!", ":", ";"}:
            glue = lang != "fr"  # French typography keeps a space before them
        elif token in {"(", "[", "{"}:
            glue_next = True
        elif token.startswith("'") and lang == "en" and len(token) > 1:
            glue = True  # it 's, don 't
        if out and out[-1].endswith("'") and lang in {"fr", "es", "de"}:
            glue = True  # c' est, l' hui
        if glue and out:
            out[-1] += token
        else:
            out.append(token)
    return " ".join(out)


def _git_lines(mirror: str, path: str) -> list[str]:
    text = subprocess.run(
        ["git", f"--git-dir={mirror}", "show", f"HEAD:{SATED_FOLDER}/{path}"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    return text.rstrip("\n").split("\n")


def prepare(mirror: str, out: str, pairs: list[str]) -> None:
    """Writes `out/sated_<pair>/pairs.tsv` (dev and test pooled) and `out/PROVENANCE.md`."""
    commit = subprocess.run(
        ["git", f"--git-dir={mirror}", "rev-parse", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    lines = [
        "# Corpora for benchmarks/real_corpora.py",
        "",
        f"SATED release 0.9.0 from github.com/{SATED_REPOSITORY}, commit {commit},",
        f"folder {SATED_FOLDER}/ (files dev.* and test.*; license CC BY-NC-ND 4.0).",
        "Dev and test pooled, Moses tokenisation undone.",
        "",
    ]
    for pair in pairs:
        src, tgt = pair.split("-")
        rows = []
        for part in ("dev", "test"):
            sources = _git_lines(mirror, f"{pair}/{part}.{src}")
            targets = _git_lines(mirror, f"{pair}/{part}.{tgt}")
            if len(sources) != len(targets):
                raise ValueError(f"{pair}/{part}: line counts differ")
            for s, t in zip(sources, targets, strict=True):
                s, t = moses_detokenize(s, src), moses_detokenize(t, tgt)
                if s and t and "\t" not in s + t:
                    rows.append((s, t))
        folder = os.path.join(out, f"sated_{pair}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "pairs.tsv"), "w", encoding="utf-8") as handle:
            handle.writelines(f"{s}\t{t}\n" for s, t in rows)
        lines.append(f"- sated_{pair}: {len(rows)} pairs")
        print(f"sated_{pair}: {len(rows)} pairs")
    with open(os.path.join(out, "PROVENANCE.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- metrics


def repeat_rates(outputs: list[str]) -> dict[str, float]:
    """Stutter measures over word sequences.

    `stutter`: share of outputs where a word occurs 3+ times in a row or a
    word 2- or 3-gram is immediately repeated (`a b a b`, `a b c a b c`), or
    a word itself holds a piece repeated 3+ times (`sssssss`, `schmuckschmuckschmuck`).
    `repeated_4grams`: share of word 4-grams that already occurred earlier in
    the same output.

    >>> rates = repeat_rates(["a b c a b c", "ein Mädchen", "x x x"])
    >>> round(rates["stutter"], 3), round(rates["repeated_4grams"], 3)
    (0.667, 0.0)
    """
    stutter = 0
    grams = 0
    repeated = 0
    piece_run = re.compile(r"(.{1,8}?)\1{2,}")
    for text in outputs:
        words = text.split()
        hit = any(piece_run.search(w) for w in words)
        for n in (1, 2, 3):
            reps = 3 if n == 1 else 2
            for i in range(len(words) - n * reps + 1):
                chunk = words[i : i + n]
                if all(words[i + k * n : i + (k + 1) * n] == chunk for k in range(1, reps)):
                    hit = True
                    break
        stutter += hit
        seen = set()
        for i in range(len(words) - 3):
            gram = tuple(words[i : i + 4])
            grams += 1
            repeated += gram in seen
            seen.add(gram)
    return {
        "stutter": stutter / max(len(outputs), 1),
        "repeated_4grams": repeated / max(grams, 1),
    }


def score(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    import sacrebleu

    result = {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
    }
    result.update(repeat_rates(hypotheses))
    lengths = [len(h.split()) for h in hypotheses]
    ref_lengths = [len(r.split()) for r in references]
    result["length_ratio"] = sum(lengths) / max(sum(ref_lengths), 1)
    return result


# --------------------------------------------------------------------------- ours


def train_ours(path: str, out: str, budget: float, *, seed: int, log, overrides=None):
    """`keras-transformer train --task tsv --data path --time-budget budget` (with the
    `TrainConfig` fields `overrides`); returns (translator, info)."""
    from keras_transformer.inference import Translator
    from keras_transformer.training.config import TrainConfig
    from keras_transformer.training.run import train

    config = TrainConfig(
        task="tsv",
        data=path,
        time_budget=budget,
        out=out,
        seed=seed,
        overwrite=True,
        **(overrides or {}),
    )
    metrics = train(config)
    with open(os.path.join(out, "config.json"), encoding="utf-8") as handle:
        settings = json.load(handle)
    info = {
        "wall_seconds": metrics["train_seconds"],
        "epochs": metrics["epochs_run"],
        "parameters": metrics["parameters"],
        "sized_from_data": settings["sized_from_data"],
        "warmup_steps": settings["warmup_steps"],
        "vocab_size": [settings.get("source_vocab_size"), settings.get("target_vocab_size")],
    }
    log(f"  ours: {json.dumps(info)}")
    return Translator.from_run_dir(out), info


# --------------------------------------------------------------------------- the tutorial's recipe


def learn_vocabulary(texts, vocab_size):
    import keras_transformer as kt

    return kt.data.WordPieceTokenizer.learn(texts, vocab_size=vocab_size)


def build_tutorial_model(
    src_vocab, tgt_vocab, *, num_layers=4, d_model=128, num_heads=8, dff=512, dropout=0.1
):
    """The tutorial's Transformer as a Functional model (same layers, masks made explicit)."""
    import keras
    import numpy as np
    import tensorflow as tf

    def positional_encoding(length, depth):
        depth = depth / 2
        positions = np.arange(length)[:, np.newaxis]
        depths = np.arange(depth)[np.newaxis, :] / depth
        angle_rads = positions * (1 / (10000**depths))
        return np.concatenate([np.sin(angle_rads), np.cos(angle_rads)], axis=-1).astype("float32")

    class TutorialPositionalEmbedding(keras.layers.Layer):
        def __init__(self, vocab_size, d_model, **kwargs):
            super().__init__(**kwargs)
            self.d_model = d_model
            self.embedding = keras.layers.Embedding(vocab_size, d_model)
            self.pos_encoding = tf.constant(positional_encoding(2048, d_model))

        def call(self, x):
            length = keras.ops.shape(x)[1]
            x = self.embedding(x)
            x = x * keras.ops.sqrt(keras.ops.cast(self.d_model, "float32"))
            return x + self.pos_encoding[None, :length, :]

    class KeyMask(keras.layers.Layer):
        def call(self, ids):
            return keras.ops.expand_dims(keras.ops.not_equal(ids, 0), 1)  # (batch, 1, len)

    def residual(x, y):
        return keras.layers.LayerNormalization()(keras.layers.Add()([x, y]))

    def ffn(x):
        y = keras.layers.Dense(dff, activation="relu")(x)
        y = keras.layers.Dense(d_model)(y)
        y = keras.layers.Dropout(dropout)(y)
        return residual(x, y)

    source = keras.Input((None,), dtype="int32", name="source")
    target = keras.Input((None,), dtype="int32", name="target")
    src_mask = KeyMask()(source)
    tgt_mask = KeyMask()(target)
    x = TutorialPositionalEmbedding(src_vocab, d_model)(source)
    x = keras.layers.Dropout(dropout)(x)
    for _ in range(num_layers):
        y = keras.layers.MultiHeadAttention(num_heads, d_model, dropout=dropout)(
            x, x, attention_mask=src_mask
        )
        x = ffn(residual(x, y))
    h = TutorialPositionalEmbedding(tgt_vocab, d_model)(target)
    h = keras.layers.Dropout(dropout)(h)
    for _ in range(num_layers):
        y = keras.layers.MultiHeadAttention(num_heads, d_model, dropout=dropout)(
            h, h, attention_mask=tgt_mask, use_causal_mask=True
        )
        h = residual(h, y)
        y = keras.layers.MultiHeadAttention(num_heads, d_model, dropout=dropout)(
            h, x, attention_mask=src_mask
        )
        h = ffn(residual(h, y))
    logits = keras.layers.Dense(tgt_vocab)(h)
    return keras.Model({"source": source, "target": target}, logits, name="tutorial")


def tutorial_loss_and_accuracy():
    import keras
    import tensorflow as tf

    loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")

    def masked_loss(label, pred):
        mask = label != 0
        loss = loss_object(label, pred)
        mask = tf.cast(mask, dtype=loss.dtype)
        loss *= mask
        return tf.reduce_sum(loss) / tf.reduce_sum(mask)

    def masked_accuracy(label, pred):
        pred = tf.argmax(pred, axis=2)
        label = tf.cast(label, pred.dtype)
        match = label == pred
        mask = label != 0
        match = match & mask
        match = tf.cast(match, dtype=tf.float32)
        mask = tf.cast(mask, dtype=tf.float32)
        return tf.reduce_sum(match) / tf.reduce_sum(mask)

    return masked_loss, masked_accuracy


def tutorial_batches(pairs, src_tok, tgt_tok, *, batch_size=64, max_tokens=128, shuffle=True):
    """The tutorial's make_batches: shuffle, batch 64, tokenize, trim to 128, pad per batch."""
    import tensorflow as tf

    sources = tf.constant([s for s, _ in pairs])
    targets = tf.constant([t for _, t in pairs])
    start, end = tgt_tok.start_id, tgt_tok.end_id

    def frame(ids):
        ids = ids[:, : max_tokens - 2]
        batch = ids.nrows()
        starts = tf.fill([batch, 1], tf.cast(start, ids.dtype))
        ends = tf.fill([batch, 1], tf.cast(end, ids.dtype))
        return tf.concat([starts, ids, ends], axis=1)

    def prepare(src, tgt):
        src_ids = frame(src_tok.tokenize(src)).to_tensor()
        tgt_ids = frame(tgt_tok.tokenize(tgt))[:, : max_tokens + 1]
        inputs = tgt_ids[:, :-1].to_tensor()
        labels = tgt_ids[:, 1:].to_tensor()
        return {"source": tf.cast(src_ids, tf.int32), "target": tf.cast(inputs, tf.int32)}, tf.cast(
            labels, tf.int32
        )

    dataset = tf.data.Dataset.from_tensor_slices((sources, targets))
    if shuffle:
        dataset = dataset.shuffle(20000)
    return dataset.batch(batch_size).map(prepare, tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def train_tutorial(train, dev, budget, *, seed, log):
    import keras

    import keras_transformer as kt
    from keras_transformer.training.callbacks import TimeBudget

    keras.utils.set_random_seed(seed)
    src_tok = learn_vocabulary([s for s, _ in train], 8000)
    tgt_tok = learn_vocabulary([t for _, t in train], 8000)
    model = build_tutorial_model(src_tok.vocab_size, tgt_tok.vocab_size)
    masked_loss, masked_accuracy = tutorial_loss_and_accuracy()
    schedule = kt.training.TransformerSchedule(128, warmup_steps=4000)
    optimizer = keras.optimizers.Adam(schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
    model.compile(loss=masked_loss, optimizer=optimizer, metrics=[masked_accuracy])
    budget_cb = TimeBudget(budget)  # wall clock, as ours; the tutorial's schedule kept
    history = model.fit(
        tutorial_batches(train, src_tok, tgt_tok),
        validation_data=tutorial_batches(dev, src_tok, tgt_tok, shuffle=False),
        epochs=10_000,
        callbacks=[budget_cb],
        verbose=0,
    )
    info = {
        "wall_seconds": round(budget_cb.elapsed, 1),
        "steps": int(model.optimizer.iterations.numpy()),
        "epochs": len(history.history["loss"]),
        "final_val_loss": float(history.history["val_loss"][-1]),
        "parameters": model.count_params(),
        "vocab_size": [src_tok.vocab_size, tgt_tok.vocab_size],
    }
    log(f"  tutorial: {json.dumps(info)}")
    return (model, src_tok, tgt_tok), info


def tutorial_translate(bundle, texts, *, max_tokens=128, batch_size=64):
    """The tutorial's Translator: greedy, re-running the whole model every step, batched."""
    import numpy as np
    import tensorflow as tf

    model, src_tok, tgt_tok = bundle

    @tf.function(reduce_retracing=True)
    def next_ids(source, target):
        logits = model({"source": source, "target": target}, training=False)
        return tf.argmax(logits[:, -1, :], axis=-1, output_type=tf.int32)

    outputs = []
    for i in range(0, len(texts), batch_size):
        chunk = texts[i : i + batch_size]
        ids = src_tok.tokenize(tf.constant(chunk))[:, : max_tokens - 2]
        n = ids.nrows()
        source = tf.concat(
            [
                tf.fill([n, 1], tf.cast(src_tok.start_id, ids.dtype)),
                ids,
                tf.fill([n, 1], tf.cast(src_tok.end_id, ids.dtype)),
            ],
            axis=1,
        ).to_tensor()
        source = tf.cast(source, tf.int32)
        target = np.full((len(chunk), 1), tgt_tok.start_id, dtype=np.int32)
        done = np.zeros(len(chunk), dtype=bool)
        limit = min(max_tokens, int(source.shape[1]) * 2 + 10)
        for _ in range(limit):
            token = next_ids(source, tf.constant(target)).numpy()
            token = np.where(done, 0, token)
            target = np.concatenate([target, token[:, None]], axis=1)
            done |= token == tgt_tok.end_id
            if done.all():
                break
        cut = []
        for row in target[:, 1:]:
            row = list(row)
            if tgt_tok.end_id in row:
                row = row[: row.index(tgt_tok.end_id)]
            cut.append(row + [0] * (target.shape[1] - 1 - len(row)))
        text = tgt_tok.detokenize(tf.constant(np.array(cut, dtype=np.int64)))
        outputs.extend(t.decode("utf-8") for t in text.numpy())
    return outputs


def translate_all(translator, texts, *, beam_size, alpha, batch_size=64):
    outputs = []
    for i in range(0, len(texts), batch_size):
        outputs.extend(translator(texts[i : i + batch_size], beam_size=beam_size, alpha=alpha))
    return outputs


def _fmt(row):
    return (
        f"BLEU {row['bleu']:.2f} chrF {row['chrf']:.2f} stutter {row['stutter']:.3f} "
        f"rep4 {row['repeated_4grams']:.3f} len {row['length_ratio']:.2f}"
    )


def run(args) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from keras_transformer._validation import parse_duration
    from keras_transformer.data.tasks.tsv import tsv_task

    budget = parse_duration(args.budget)
    os.makedirs(args.out, exist_ok=True)
    log_lines = []

    def log(text):
        print(text, flush=True)
        log_lines.append(text)

    import tensorflow as tf

    log(f"TensorFlow {tf.__version__}, {budget:.0f} s of training (wall clock) per recipe")
    results = {}
    for pair in args.pairs:
        path = os.path.join(args.corpora, f"sated_{pair}", "pairs.tsv")
        task = tsv_task(path=path, seed=args.seed)  # the split train --task tsv makes
        test = task.validation if args.split == "validation" else task.test
        test = test[: args.limit_test] if args.limit_test else test
        log(
            f"== {pair}: train {len(task.train)}, validation {len(task.validation)}; scoring "
            f"{len(test)} {args.split} pairs"
        )
        sources = [s for s, _ in test]
        references = [t for _, t in test]
        entry = {}
        for recipe in args.recipes:
            rows = {}
            if recipe == "ours":
                out = os.path.join(args.out, f"ours_{pair}")
                translator, info = train_ours(
                    path, out, budget, seed=args.seed, log=log, overrides=_overrides(args.set)
                )
                for name, beam in (("greedy", 1), ("beam 4", 4)):
                    start = time.perf_counter()
                    outputs = translate_all(translator, sources, beam_size=beam, alpha=0.6)
                    rows[name] = {"beam_size": beam, **score(outputs, references)}
                    rows[name]["decode_seconds"] = round(time.perf_counter() - start, 1)
                    rows[name]["examples"] = outputs[:5]
            else:
                bundle, info = train_tutorial(
                    task.train, task.validation, budget, seed=args.seed, log=log
                )
                start = time.perf_counter()
                outputs = tutorial_translate(bundle, sources)
                rows["greedy"] = {"beam_size": 1, **score(outputs, references)}
                rows["greedy"]["decode_seconds"] = round(time.perf_counter() - start, 1)
                rows["greedy"]["examples"] = outputs[:5]
            for name, row in rows.items():
                log(f"  {recipe} {args.split} {name}: " + _fmt(row))
            entry[recipe] = {"train": info, "test": rows}
        entry["references"] = references[:5]
        entry["sources"] = sources[:5]
        results[pair] = entry
        with open(os.path.join(args.out, "results.json"), "w", encoding="utf-8") as handle:
            json.dump({"budget_seconds": budget, "results": results}, handle, indent=1)
    log("")
    log(table(results, budget, args.split))
    with open(os.path.join(args.out, "log.txt"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(log_lines) + "\n")


def table(results, budget, split="test") -> str:
    lines = [
        f"{split.capitalize()} split, {budget / 60:.0f} min of training (wall clock) per recipe",
        "",
        "| corpus | recipe | params | epochs | decoding | BLEU | chrF | stutter | repeated 4-grams |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for pair, entry in results.items():
        for recipe in ("tutorial", "ours"):
            if recipe not in entry:
                continue
            info = entry[recipe]["train"]
            for name, row in entry[recipe]["test"].items():
                lines.append(
                    f"| {pair} | {recipe} | {info['parameters'] / 1e6:.1f}M | {info['epochs']} | "
                    f"{name} | {row['bleu']:.1f} | {row['chrf']:.1f} | "
                    f"{row['stutter']:.3f} | {row['repeated_4grams']:.3f} |"
                )
    return "\n".join(lines)


def _overrides(settings: list[str]) -> dict:
    """`["dropout=0.3", "jit_compile=off"]` -> `{"dropout": 0.3, "jit_compile": "off"}`."""
    pairs = [setting.partition("=") for setting in settings]
    if any(not name or not sep for name, sep, _ in pairs):
        raise SystemExit(f"--set takes NAME=VALUE items, got {settings}")

    def value(text):
        try:
            return json.loads(text)  # numbers, true/false, null
        except json.JSONDecodeError:
            return text

    return {name: value(text) for name, _, text in pairs}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="write the SATED corpora as TSV files")
    p.add_argument("--mirror", required=True, help="git directory of mihirkhandekar/seq2seq-meminf")
    p.add_argument("--out", required=True)
    p.add_argument("--pairs", nargs="+", default=["en-de", "en-fr", "en-es"])
    r = sub.add_parser("run", help="train both recipes for the same time and score them")
    r.add_argument("--corpora", required=True)
    r.add_argument("--pairs", nargs="+", default=["en-de", "en-fr"])
    r.add_argument("--recipes", nargs="+", default=["tutorial", "ours"])
    r.add_argument("--budget", default="8m", help="training time per recipe, e.g. 240s, 8m")
    r.add_argument("--limit-test", type=int, default=0)
    r.add_argument(
        "--split",
        choices=("test", "validation"),
        default="test",
        help="score this split (validation: for trying settings; test: to report)",
    )
    r.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="TrainConfig fields of ours to override, e.g. dropout=0.3 vocab_size=1000",
    )
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.mirror, args.out, args.pairs)
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
