"""SavedModel export: served by plain TensorFlow + tensorflow_text, equal to the Translator."""

import json
import os
import subprocess
import sys

import pytest

from keras_transformer.cli import main
from keras_transformer.export import export_translator, next_version
from keras_transformer.inference import Translator
from tests.helpers import TINY_SOURCES as SOURCES
from tests.inference.varied_run import make_varied_run

TEXTS = [*SOURCES, "", "one two " * 60, "ünknöwn", " \t "]

# Runs in a fresh interpreter: only tensorflow and tensorflow_text are imported.
CLIENT = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the tokenizer ops)
loaded = tf.saved_model.load(sys.argv[1])
serve = loaded.signatures["serving_default"]
texts = json.loads(sys.argv[2])
out = serve(text=tf.constant(texts, tf.string))
graph = serve.graph.as_graph_def()
ops = {n.op for n in graph.node}
for function in graph.library.function:
    ops |= {n.op for n in function.node_def}
print(json.dumps({
    "translations": [t.decode("utf-8") for t in out["translation"].numpy()],
    "outputs": sorted(serve.structured_outputs),
    "py_ops": sorted(o for o in ops if "PyFunc" in o or o == "EagerPyFunc"),
    "keras_transformer_imported": "keras_transformer" in sys.modules,
}))
"""


@pytest.fixture(scope="module")
def varied_run(tiny_run, tmp_path_factory):
    """A model whose translations differ between inputs (see tests/inference/varied_run.py)."""
    return make_varied_run(tiny_run, tmp_path_factory.mktemp("varied") / "run")


@pytest.fixture(scope="module")
def exported(varied_run, tmp_path_factory):
    base = tmp_path_factory.mktemp("serving") / "translator"
    assert main(["export", str(varied_run), "--out", str(base)]) == 0
    return base


def run_client(path, texts):
    result = subprocess.run(
        [sys.executable, "-c", CLIENT, str(path), json.dumps(texts)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_export_in_a_fresh_process_equals_the_translator(varied_run, exported):
    served = run_client(exported / "1", TEXTS)
    translations = served["translations"]
    assert translations == Translator.from_run_dir(varied_run)(TEXTS)
    # empty and whitespace-only inputs give "", decided in the graph; the others do not
    assert translations[TEXTS.index("")] == translations[-1] == ""
    assert all(translations[:5]) and len(set(translations[:5])) >= 3
    assert run_client(exported / "1", [""])["translations"] == [""]
    assert served["outputs"] == ["translation"]
    assert served["py_ops"] == []
    assert served["keras_transformer_imported"] is False


def test_saved_model_cli_lists_the_signature(exported):
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    result = subprocess.run(
        [cli, "show", "--dir", str(exported / "1"), "--all"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    text = result.stdout
    assert "signature_def['serving_default']" in text
    assert "inputs['text'] tensor_info:" in text and "outputs['translation'] tensor_info:" in text
    assert text.count("dtype: DT_STRING") >= 2 and "shape: (-1)" in text


def test_versions_increase_and_are_never_overwritten(varied_run, exported):
    translator = Translator.from_run_dir(varied_run)
    assert next_version(exported) == 2
    assert export_translator(translator, exported).endswith(os.sep + "2")
    with pytest.raises(FileExistsError, match="never overwritten"):
        export_translator(translator, exported, version=1)
    with pytest.raises(ValueError, match="version"):
        export_translator(translator, exported, version=0)


def test_export_logs_nothing_even_with_tensorflow_logging_at_info(varied_run, tmp_path):
    import logging

    import tensorflow as tf

    records = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append
    tf_logger = tf.get_logger()
    level = tf_logger.level
    tf_logger.setLevel(logging.INFO)  # as a notebook kernel may leave it
    tf_logger.addHandler(handler)
    try:
        export_translator(Translator.from_run_dir(varied_run), tmp_path)
        assert tf_logger.level == logging.INFO  # restored
    finally:
        tf_logger.removeHandler(handler)
        tf_logger.setLevel(level)
    assert not [r.getMessage() for r in records if r.levelno >= logging.INFO]


def test_beam_search_export(varied_run, tmp_path):
    translator = Translator.from_run_dir(varied_run)
    path = export_translator(translator, tmp_path, beam_size=3)
    texts = [*SOURCES, ""]
    served = run_client(path, texts)
    assert served["translations"] == translator(texts, beam_size=3)
    assert served["translations"][-1] == ""


@pytest.mark.parametrize("beam_size", [0, -1, 1.5, True])
def test_bad_beam_size_is_rejected_before_tracing(tiny_run, tmp_path, beam_size):
    translator = Translator.from_run_dir(tiny_run)
    with pytest.raises(ValueError, match="beam_size must be an integer >= 1"):
        export_translator(translator, tmp_path, beam_size=beam_size)
    assert translator._searches == {} and not os.listdir(tmp_path)


def test_cli_export_with_beam_size_zero_is_a_one_line_error(tmp_path, capsys):
    # the beam size is checked before the run directory is even read
    assert (
        main(["export", str(tmp_path / "no-run"), "--out", str(tmp_path), "--beam-size", "0"]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "beam_size must be an integer >= 1" in err[0]
    assert err[0].startswith("keras-transformer export: error:")
