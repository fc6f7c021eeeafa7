"""A real-world-shaped UTF-8 corpus trains, translates from stdin line for line and serves.

The TSV has a byte-order mark, CRLF line ends, U+00A0 / U+202F / U+2009 / U+3000
spaces, combining accents, emoji with zero-width joiners, Arabic, Hebrew, CJK and Thai.
Everything runs through the console script in subprocesses, as a user runs it, and
the SavedModel is served by a process that never imports keras_transformer.
"""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE_WORDS = [
    "caf\u00e9",
    "e\u0301te\u0301",  # decomposed accents: NFC composes them
    "\U0001f469\u200d\U0001f467",  # emoji ZWJ sequence
    "\u4f60\u597d",
    "Quoi\u202f?",
    "Nummer\u00a028",
    "a\u2009b",
    "c\u3000d",
    "\U0001f44d\U0001f3fd",
    "na\u00efve",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",  # Thai (unspaced: pieces from merges)
]
TARGET_WORDS = [
    "\u0645\u0631\u062d\u0628\u0627",
    "\u0634\u0643\u0631\u0627",
    "\u05e9\u05dc\u05d5\u05dd",
    "\u3053\u3093",
    "Was\u00a0?",
    "Zahl\u202f28",
    "x\u2009y",
    "z\u3000w",
    "\U0001f44d",
    "gr\u00fc\u00dfe",
    "\u0e02\u0e2d\u0e1a\u0e04\u0e38\u0e13",
]
CONSOLE = str(Path(sys.executable).with_name("keras-transformer"))
ENV = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": ""}

CLIENT = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = serve(text=tf.constant(json.loads(sys.stdin.read()), tf.string))["translation"]
print(json.dumps({
    "translations": [t.decode("utf-8") for t in out.numpy()],
    "keras_transformer_imported": "keras_transformer" in sys.modules,
}))
"""


def _run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, env=ENV, timeout=600, **kwargs)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-2000:]
    return result.stdout.decode("utf-8")


@pytest.fixture(scope="module")
def unicode_run(tmp_path_factory):
    rng = random.Random(0)
    lines = []
    for _ in range(80):
        picks = rng.sample(range(len(SOURCE_WORDS)), 3)
        lines.append(
            " ".join(SOURCE_WORDS[i] for i in picks)
            + "\t"
            + " ".join(TARGET_WORDS[i] for i in picks)
        )
    root = tmp_path_factory.mktemp("unicode")
    data = root / "pairs.tsv"
    data.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8"))
    run_dir = root / "run"
    _run(
        [CONSOLE, "train", "--task", "tsv", "--data", str(data), "--out", str(run_dir)]
        + ["--epochs", "2", "--num-layers", "1", "--d-model", "16", "--num-heads", "2"]
        + ["--dff", "32", "--batch-size", "8"]
    )
    return run_dir, [line.split("\t")[0] for line in lines]


def test_translates_line_for_line_and_the_export_serves_the_same(unicode_run, tmp_path):
    run_dir, sources = unicode_run
    inputs = sources[:6] + ["", "\u00a0\u3000", "\u0645\u0631\u062d\u0628\u0627 \u4f60\u597d"]
    printed = _run([CONSOLE, "translate", str(run_dir)], input="\n".join(inputs).encode("utf-8"))
    translations = printed.split("\n")
    assert translations[-1] == ""  # every line ends with a newline
    translations = translations[:-1]
    assert len(translations) == len(inputs)
    assert translations[6] == "" and translations[7] == ""  # no tokens in, nothing out
    assert any(translations[:6]), "the trained model translated nothing"

    _run([CONSOLE, "export", str(run_dir), "--out", str(tmp_path / "export")])
    served = json.loads(
        _run(
            [sys.executable, "-c", CLIENT, str(tmp_path / "export" / "1")],
            input=json.dumps(inputs).encode("utf-8"),
        )
    )
    assert served["keras_transformer_imported"] is False
    assert served["translations"] == translations
