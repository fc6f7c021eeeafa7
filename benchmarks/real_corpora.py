"""Real sentences: `keras-transformer train --task tsv --time-budget` against the peers' recipes.

Two subcommands:

    # 1. write the corpora as TSV files (source<TAB>target), outside the repository:
    #    SATED (-> /tmp/corpora/sated_en-de/pairs.tsv, ...)
    python benchmarks/real_corpora.py prepare \\
        --mirror /path/to/seq2seq-meminf.git --out /tmp/corpora
    #    an Anki/Tatoeba file, zipped or not (-> /tmp/corpora/anki-en-es/pairs.tsv)
    python benchmarks/real_corpora.py prepare --anki spa-eng.zip --name anki-en-es \\
        --out /tmp/corpora
    #    line-aligned Moses-tokenised files, pooled (-> /tmp/corpora/news-en-es/pairs.tsv)
    python benchmarks/real_corpora.py prepare --moses nt2012.en nt2012.es nt2013.en nt2013.es \\
        --langs en es --name news-en-es --out /tmp/corpora

    # 2. per corpus, train each recipe for the same wall-clock time, score the test split
    python benchmarks/real_corpora.py run --corpora /tmp/corpora \\
        --pairs en-de en-fr --budget 8m --out /tmp/corpora/results
    python benchmarks/real_corpora.py run --corpora /tmp/corpora --pairs anki-en-es \\
        --recipes tutorial kerasio ours --budget 10m --out /tmp/corpora/anki

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

`--pairs` names corpora: `NAME` reads `CORPORA/NAME/pairs.tsv`, or else
`CORPORA/sated_NAME/pairs.tsv` (so `en-de` still reads the SATED layout).

`prepare --anki FILE --name NAME` reads the Anki/Tatoeba layout (manythings.org/anki,
the keras-io example's `spa-eng.zip`): a `.txt` file or a `.zip` holding one,
one pair a line, 2 or 3 tab-separated columns (English, translation,
attribution); the first two columns are kept. `prepare --moses SRC TGT [SRC TGT
...] --langs SRC_LANG TGT_LANG --name NAME` pools line-aligned Moses-tokenised
files (Europarl, newstest) and undoes the tokenisation; pairs with an empty side
are dropped. Each writes `OUT/NAME/pairs.tsv` and `OUT/NAME/PROVENANCE.md`.

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
- **kerasio**: the keras-io example "English-to-Spanish translation with a
  sequence-to-sequence Transformer" (fchollet), in `kerasio_recipe.py`: words
  from `TextVectorization` (15,000 per language, 20 tokens, punctuation
  stripped, lower-cased), one encoder and one decoder layer (embedding 256,
  feed-forward 2048, 8 heads of width 256, learned positions), `Dropout(0.5)`,
  RMSprop and the cross-entropy ignoring padding, batches of 64, its 30 epochs
  cut by the same wall-clock budget; its greedy `decode_sequence` (20 words at
  most), batched. Its outputs are lower-case and without punctuation by design.

The test split is scored with sacrebleu (BLEU and chrF on the strings, against
the references as they are: what a user gets), "BLEU (normalised)" (BLEU after
lower-casing and deleting `string.punctuation` and "¿¡" in outputs and
references alike, which does not count the keras-io recipe's design against
it), and two stutter measures: the share of outputs with a word repeated 3+ times in a
row, a word 2- or 3-gram repeated back to back, or a piece repeated 3+ times
inside a word; and the share of word 4-grams that occur earlier in the same
output.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import string
import subprocess
import sys
import time
import zipfile

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


def _write_corpus(out: str, name: str, rows: list[tuple[str, str]], provenance: list[str]) -> str:
    """Writes `out/name/pairs.tsv` and `out/name/PROVENANCE.md`; returns the TSV path."""
    if not rows:
        raise ValueError(f"--name {name}: no pairs to write (every line was empty or malformed)")
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "pairs.tsv")
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(f"{s}\t{t}\n" for s, t in rows)
    lines = [f"# {name}", "", *provenance, "", f"{len(rows)} pairs."]
    with open(os.path.join(folder, "PROVENANCE.md"), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print(f"{name}: {len(rows)} pairs -> {path}")
    return path


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_anki(path: str) -> tuple[list[tuple[str, str]], str]:
    """Pairs of an Anki/Tatoeba file (`.txt`, or a `.zip` holding one); returns (pairs, member).

    Each line holds 2 or 3 tab-separated columns (English, translation,
    attribution); the first two are the pair. In a zip, the largest `.txt`
    member that is not `_about.txt` is read. Empty lines are skipped; other
    lines without two non-empty columns raise one short error.
    """
    with open(path, "rb") as handle:
        data = handle.read()
    member = ""
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            texts = [
                info
                for info in archive.infolist()
                if info.filename.endswith(".txt")
                and not os.path.basename(info.filename).startswith("_")
            ]
            if not texts:
                raise ValueError(f"--anki {path}: the zip holds no .txt file of pairs")
            member = max(texts, key=lambda info: info.file_size).filename
            data = archive.read(member)
    text = data.decode("utf-8-sig").replace("\r\n", "\n")
    rows, bad = [], []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) not in (2, 3) or not columns[0].strip() or not columns[1].strip():
            bad.append(number)
            continue
        rows.append((columns[0].strip(), columns[1].strip()))
    if bad:
        where = f"{path}" + (f" ({member})" if member else "")
        raise ValueError(
            f"--anki {where}: {len(bad)} line(s) are not 2 or 3 tab-separated columns with "
            f"text in the first two, e.g. line(s) {', '.join(map(str, bad[:5]))}; "
            "fix or remove them"
        )
    return rows, member


def prepare_anki(path: str, out: str, name: str) -> str:
    """Writes `out/name/pairs.tsv` from an Anki/Tatoeba file or zip (see `read_anki`)."""
    rows, member = read_anki(path)
    with open(path, "rb") as handle:
        digest = _sha256(handle.read())
    source = f"{os.path.basename(path)}" + (f", member {member}" if member else "")
    provenance = [
        f"Anki/Tatoeba layout: {source} (sha256 {digest}).",
        "First two tab-separated columns kept (English, translation); the text is unchanged.",
    ]
    return _write_corpus(out, name, rows, provenance)


def prepare_moses(files: list[str], langs: list[str], out: str, name: str) -> str:
    """Writes `out/name/pairs.tsv` from line-aligned Moses-tokenised `SRC TGT` file pairs.

    The files are pooled in order; `moses_detokenize` undoes the tokenisation
    (with `langs` = source and target language codes); pairs with an empty side
    or a tab are dropped.
    """
    if len(files) % 2:
        raise ValueError(
            f"--moses {' '.join(files)}: give files in SRC TGT pairs (got {len(files)} files)"
        )
    if len(langs) != 2:
        raise ValueError(f"--langs {' '.join(langs)}: give two language codes, e.g. --langs en es")
    src_lang, tgt_lang = langs
    rows, provenance = [], ["Moses-tokenised line-aligned files, pooled, tokenisation undone:"]
    for src_path, tgt_path in zip(files[::2], files[1::2], strict=True):
        sides = []
        for side in (src_path, tgt_path):
            with open(side, "rb") as handle:
                data = handle.read()
            provenance.append(f"- {os.path.basename(side)} (sha256 {_sha256(data)})")
            sides.append(data.decode("utf-8-sig").replace("\r\n", "\n").rstrip("\n").split("\n"))
        if len(sides[0]) != len(sides[1]):
            raise ValueError(
                f"--moses {src_path} {tgt_path}: {len(sides[0])} and {len(sides[1])} lines; "
                "the two files of a pair must be line-aligned"
            )
        for s, t in zip(*sides, strict=True):
            s, t = moses_detokenize(s, src_lang), moses_detokenize(t, tgt_lang)
            if s and t and "\t" not in s + t:
                rows.append((s, t))
    return _write_corpus(out, name, rows, provenance)


def corpus_path(corpora: str, name: str) -> str:
    """`corpora/name/pairs.tsv`, or else `corpora/sated_name/pairs.tsv` (the SATED layout)."""
    candidates = [
        os.path.join(corpora, name, "pairs.tsv"),
        os.path.join(corpora, f"sated_{name}", "pairs.tsv"),
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"--pairs {name}: neither {candidates[0]} nor {candidates[1]} exists; "
        "write it with `prepare` or check --corpora"
    )


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


_PUNCTUATION = str.maketrans("", "", string.punctuation + "¿¡")


def normalise(text: str) -> str:
    """Lower-cased, `string.punctuation` and "¿¡" deleted, spaces collapsed.

    >>> normalise("¿Dónde está   la estación? ¡Ya!")
    'dónde está la estación ya'
    """
    return " ".join(text.lower().translate(_PUNCTUATION).split())


def score(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    """BLEU and chrF on the strings, BLEU on `normalise`d strings, stutter and length ratio."""
    import sacrebleu

    result = {
        "bleu": sacrebleu.corpus_bleu(hypotheses, [references]).score,
        "chrf": sacrebleu.corpus_chrf(hypotheses, [references]).score,
        "bleu_normalised": sacrebleu.corpus_bleu(
            [normalise(h) for h in hypotheses], [[normalise(r) for r in references]]
        ).score,
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
    start = time.perf_counter()
    metrics = train(config)
    command_seconds = time.perf_counter() - start
    with open(os.path.join(out, "config.json"), encoding="utf-8") as handle:
        settings = json.load(handle)
    info = {
        "wall_seconds": metrics["train_seconds"],
        "command_seconds": round(command_seconds, 1),
        "decoding": metrics.get("decoding"),
        "test_length_ratio": metrics.get("test_length_ratio"),
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
        f"BLEU {row['bleu']:.2f} chrF {row['chrf']:.2f} "
        f"BLEU-normalised {row['bleu_normalised']:.2f} stutter {row['stutter']:.3f} "
        f"rep4 {row['repeated_4grams']:.3f} len {row['length_ratio']:.2f}"
    )


def run(args) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from keras_transformer._validation import parse_duration
    from keras_transformer.data.tasks.tsv import tsv_task

    budget = parse_duration(args.budget)
    try:  # every corpus is found before any training starts
        paths = {pair: corpus_path(args.corpora, pair) for pair in args.pairs}
    except FileNotFoundError as error:
        raise SystemExit(f"run: {error}") from None
    os.makedirs(args.out, exist_ok=True)
    log_lines = []

    def log(text):
        print(text, flush=True)
        log_lines.append(text)

    import tensorflow as tf

    log(f"TensorFlow {tf.__version__}, {budget:.0f} s of training (wall clock) per recipe")
    results = {}
    for pair in args.pairs:
        path = paths[pair]
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
                searches = (("greedy", 1, 0.6), ("beam 4", 4, 0.6), ("chosen", None, None))
                for name, beam, alpha in searches:
                    start = time.perf_counter()
                    outputs = translate_all(translator, sources, beam_size=beam, alpha=alpha)
                    rows[name] = {"beam_size": beam, **score(outputs, references)}
                    rows[name]["decode_seconds"] = round(time.perf_counter() - start, 1)
                    rows[name]["examples"] = outputs[:5]
            elif recipe == "kerasio":
                kerasio = _kerasio_recipe()
                bundle, info = kerasio.train_kerasio(
                    task.train, task.validation, budget, seed=args.seed, log=log
                )
                start = time.perf_counter()
                outputs = kerasio.kerasio_translate(bundle, sources)
                rows["greedy"] = {"beam_size": 1, **score(outputs, references)}
                rows["greedy"]["decode_seconds"] = round(time.perf_counter() - start, 1)
                rows["greedy"]["examples"] = outputs[:5]
                alone = [kerasio._clean(kerasio.decode_one(bundle, s)) for s in sources[:3]]
                same = alone == outputs[:3]
                info["batched_equals_one_by_one"] = same
                log(f"  kerasio: batched decoding == the example's loop on 3 sentences: {same}")
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


RECIPES = ("tutorial", "kerasio", "ours")
"""The recipes `run` trains, in the order of the table."""


def _kerasio_recipe():
    """`benchmarks/kerasio_recipe.py`, imported from beside this file (TensorFlow loads then)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import kerasio_recipe

    return kerasio_recipe


def table(results, budget, split="test") -> str:
    lines = [
        f"{split.capitalize()} split, {budget / 60:.0f} min of training (wall clock) per recipe",
        "",
        "| corpus | recipe | params | epochs | decoding | BLEU | chrF | BLEU (normalised) "
        "| stutter | repeated 4-grams |",
        "|---|---|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for pair, entry in results.items():
        for recipe in RECIPES:
            if recipe not in entry:
                continue
            info = entry[recipe]["train"]
            for name, row in entry[recipe]["test"].items():
                lines.append(
                    f"| {pair} | {recipe} | {info['parameters'] / 1e6:.1f}M | {info['epochs']} | "
                    f"{name} | {row['bleu']:.1f} | {row['chrf']:.1f} | "
                    f"{row['bleu_normalised']:.1f} | "
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
    p = sub.add_parser("prepare", help="write corpora as TSV files (SATED, Anki or Moses files)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--mirror", help="git directory of mihirkhandekar/seq2seq-meminf (SATED)")
    source.add_argument("--anki", metavar="FILE", help="an Anki/Tatoeba .txt or .zip (with --name)")
    source.add_argument(
        "--moses",
        nargs="+",
        metavar="FILE",
        help="line-aligned Moses-tokenised SRC TGT [SRC TGT ...] files (with --langs, --name)",
    )
    p.add_argument("--out", required=True)
    p.add_argument("--pairs", nargs="+", default=["en-de", "en-fr", "en-es"], help="SATED pairs")
    p.add_argument("--name", help="corpus folder written under --out (--anki, --moses)")
    p.add_argument("--langs", nargs=2, metavar=("SRC", "TGT"), help="languages of --moses files")
    r = sub.add_parser("run", help="train the recipes for the same time and score them")
    r.add_argument("--corpora", required=True)
    r.add_argument(
        "--pairs",
        nargs="+",
        default=["en-de", "en-fr"],
        help="corpus names: CORPORA/NAME/pairs.tsv or CORPORA/sated_NAME/pairs.tsv",
    )
    r.add_argument("--recipes", nargs="+", choices=RECIPES, default=["tutorial", "ours"])
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
        if args.mirror:
            prepare(args.mirror, args.out, args.pairs)
            return
        if not args.name:
            parser.error("--anki and --moses need --name NAME, e.g. --name anki-en-es")
        if args.moses and not args.langs:
            parser.error("--moses needs --langs SRC TGT, e.g. --langs en es")
        try:
            if args.anki:
                prepare_anki(args.anki, args.out, args.name)
            else:
                prepare_moses(args.moses, args.langs, args.out, args.name)
        except (OSError, ValueError) as error:
            raise SystemExit(f"prepare: {error}") from None
    else:
        run(args)


if __name__ == "__main__":
    sys.exit(main())
