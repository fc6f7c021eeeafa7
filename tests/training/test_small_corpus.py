"""A 300-pair corpus: max_length from the learnt pieces (<= 1 % cut), truthful vocabulary, labelled
warnings (issue 26 item 2)."""

import json
import logging
import random

import numpy as np

from keras_transformer.cli import main
from keras_transformer.data import WordPieceTokenizer
from keras_transformer.data.tasks.tsv import read_tsv
from tests.helpers import TINY_MODEL_ARGS

SUBJECTS = [
    ("I", "yo"),
    ("my brother", "mi hermano"),
    ("the old teacher", "el viejo profesor"),
    ("our neighbours", "nuestros vecinos"),
    ("Maria", "María"),
    ("you", "tú"),
]
VERBS = [
    ("see", "veo"),
    ("want", "quiero"),
    ("painted", "pintó"),
    ("remember", "recuerdo"),
    ("would like to describe", "quisiera describir"),
    ("found", "encontró"),
]
OBJECTS = [
    ("the red house", "la casa roja"),
    ("a small dog", "un perro pequeño"),
    ("the station", "la estación"),
    ("three interesting books", "tres libros interesantes"),
    ("the unbelievably complicated instructions", "las instrucciones increíblemente complicadas"),
]
TAILS = [
    ("today", "hoy"),
    ("yesterday afternoon", "ayer por la tarde"),
    ("again", "otra vez"),
    ("near the crowded market", "cerca del mercado abarrotado"),
    ("with friends", "con amigos"),
    ("every summer", "cada verano"),
    ("unfortunately", "desafortunadamente"),
]


def small_corpus(path, num_pairs=300, seed=0):
    """English -> Spanish pairs from templates, 3 to ~25 words: a generated 300-pair user file."""
    rng = random.Random(seed)
    lines = set()
    while len(lines) < num_pairs:
        parts = [rng.choice(SUBJECTS), rng.choice(VERBS), rng.choice(OBJECTS)]
        parts += rng.sample(TAILS, rng.choice([0, 0, 1, 1, 2, 3, 5]))
        number = rng.randrange(1000)  # distinct pairs, one rare word each
        lines.add(
            " ".join(e for e, _ in parts)
            + f" {number}.\t"
            + " ".join(s for _, s in parts)
            + f" {number}."
        )
    path.write_text("\n".join(sorted(lines)) + "\n", encoding="utf-8")
    return path


def test_a_300_pair_file_is_sized_from_its_pieces(tmp_path, caplog):
    data, out = small_corpus(tmp_path / "pairs.tsv"), tmp_path / "run"
    argv = [
        "train",
        "--task",
        "tsv",
        "--data",
        str(data),
        "--out",
        str(out),
        "--epochs",
        "1",
        *TINY_MODEL_ARGS,
        "--jit-compile",
        "off",
        "-v",  # the vocabulary's shortfall is a note (INFO): nothing to do about it
    ]
    with caplog.at_level(logging.INFO, logger="keras_transformer"):
        assert main(argv) == 0
    config = json.loads((out / "config.json").read_text())
    max_length = config["max_length"]
    assert config["sized_from_data"]["max_length"] == max_length
    # measured independently: the saved tokenizers on the training pairs
    source = WordPieceTokenizer.load(out / "tokenizers" / "source")
    target = WordPieceTokenizer.load(out / "tokenizers" / "target")
    pairs = read_tsv(data)
    lengths = [
        tok.tokenize([p[i] for p in pairs]).row_lengths().numpy()
        for i, tok in ((0, source), (1, target))
    ]
    cut = np.maximum(*lengths) + 2 > max_length
    assert cut.mean() <= 0.01 * 1.25  # <= 1 % of the training pairs (the file: ~1.25x them)
    assert max_length < 256 and (np.maximum(*lengths) + 2 > max_length - 8).any()  # not loose
    # the vocabulary recorded is the one learnt, and the shortfall was explained with its side
    assert config["vocab_size"] == max(source.vocab_size, target.vocab_size)
    assert config["vocab_size_requested"] == 1000 > config["vocab_size"]
    assert (config["source_vocab_size"], config["target_vocab_size"]) == (
        source.vocab_size,
        target.vocab_size,
    )
    notes = [r.getMessage() for r in caplog.records if "distinct pieces" in r.getMessage()]
    assert notes, "the shortfall of the vocabulary is said"
    assert all(w.split(":")[0] in ("source", "target") for w in notes), notes
    assert any("distinct pieces; vocabulary" in w and "instead of 1000" in w for w in notes)
    # ... as a note for -v (INFO): nothing to do about it, so no warning by default
    shortfall = [r for r in caplog.records if "distinct pieces" in r.getMessage()]
    assert all(r.levelno == logging.INFO for r in shortfall)
    assert 0.9 < config["pieces_per_word"]["target"] < 1.6  # whole words, not 2.5 pieces a word


def test_longer_test_sentences_are_counted_not_used_to_size_the_run(tmp_path):
    # 300 short training pairs and a test file in which 2 of 10 sentences are longer. The test
    # split does not choose a setting (issue 50): max_length comes from the training and
    # validation pairs, and the test sources cut when translated are counted in metrics.json.
    short = "".join(f"the cat {i} sleeps\tel gato {i} duerme\n" for i in range(300))
    long_words = " ".join(f"word{i}" for i in range(24))
    tests = [f"the cat {i} sleeps\tel gato {i} duerme" for i in range(8)]
    tests += [f"the cat {long_words} {i}\tel gato {long_words} {i}" for i in range(2)]
    (tmp_path / "train.tsv").write_text(short, encoding="utf-8")
    (tmp_path / "test.tsv").write_text("\n".join(tests) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    argv = ["train", "--data", str(tmp_path / "train.tsv"), "--out", str(out)]
    argv += ["--test-data", str(tmp_path / "test.tsv"), "--epochs", "1", *TINY_MODEL_ARGS]
    assert main([*argv, "--jit-compile", "off"]) == 0
    config = json.loads((out / "config.json").read_text())
    metrics = json.loads((out / "metrics.json").read_text())
    source = WordPieceTokenizer.load(out / "tokenizers" / "source")
    train_sources = [line.split("\t")[0] for line in short.splitlines()]
    framed = source.tokenize(train_sources).row_lengths().numpy() + 2
    assert config["max_length"] == config["sized_from_data"]["max_length"] <= 16
    assert (framed > config["max_length"]).mean() <= 0.01
    assert metrics["test_translated"] == 10
    assert metrics["test_sources_truncated"] == 2
