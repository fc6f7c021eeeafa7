"""A decoder-only run translates and exports like an encoder-decoder run.

Its tokenizer is `tokenizers/joint`; `translate`, `export` and
`Translator.from_run_dir` read `config.json`'s architecture. Training's test
samples (`metrics.json`), the `translate` command, the `Translator` and the
SavedModel served in a fresh process give the same strings.
"""

import json
import shutil

import pytest

from keras_transformer.cli import main
from keras_transformer.errors import DamagedRunError, UserInputError
from keras_transformer.inference import Translator
from keras_transformer.inference.translator import PrefixTranslator
from keras_transformer.runs import run_files
from tests.export.test_serving import run_client
from tests.helpers import TINY_MODEL_ARGS
from tests.inference.varied_run import make_varied_run

TRAIN = [
    "train",
    "--task",
    "numbers",
    "--architecture",
    "decoder-only",
    "--epochs",
    "1",
    "--num-train",
    "64",
    "--num-validation",
    "16",
    "--num-test",
    "16",
    "--batch-size",
    "16",
    *TINY_MODEL_ARGS,
    "--max-length",
    "12",
    "--vocab-size",
    "100",
    "--jit-compile",
    "off",
]
EXTRA = ["", " \t ", "one two " * 20, "ünknöwn"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("decoder_only") / "run"
    assert main([*TRAIN, "--out", str(run_dir)]) == 0
    return run_dir


@pytest.fixture(scope="module")
def samples(run):
    return json.loads((run / "metrics.json").read_text())["samples"]


@pytest.fixture(scope="module")
def varied(run, tmp_path_factory):
    """The run with random N(0, 1) weights: input-dependent output
    (the trained 1-epoch model says nearly the same for every input)."""
    destination = tmp_path_factory.mktemp("varied_decoder_only") / "run"
    return make_varied_run(run, destination, raise_end=False)


def translate_command(argv, capsys):
    capsys.readouterr()
    assert main(["translate", *argv]) == 0
    return capsys.readouterr().out[:-1].split("\n")


def test_the_run_has_the_joint_layout(run):
    assert (run / "tokenizers" / "joint" / "vocab.txt").is_file()
    assert not (run / "tokenizers" / "source").exists()
    architecture, files = run_files(run)
    assert architecture == "decoder-only" and set(files) == {"model", "joint"}


def test_training_samples_equal_translate_and_the_export(run, samples, capsys, tmp_path):
    sources = [s["source"] for s in samples]
    predictions = [s["prediction"] for s in samples]
    translator = Translator.from_run_dir(run)
    assert isinstance(translator, PrefixTranslator)
    assert translator(sources) == predictions
    for flags in ([], ["--no-cache"], ["--jit-compile", "on"], ["--batch-size", "2"]):
        assert translate_command([str(run), *flags, *sources], capsys) == predictions, flags
    assert main(["export", str(run), "--out", str(tmp_path / "served")]) == 0
    served = run_client(tmp_path / "served" / "1", sources)
    assert served["translations"] == predictions
    assert served["outputs"] == ["translation"] and served["py_ops"] == []
    assert not served["keras_transformer_imported"]


@pytest.mark.parametrize("beam_size", [1, 3])
def test_varied_model_translator_equals_the_export(varied, beam_size, samples, capsys, tmp_path):
    texts = [s["source"] for s in samples] + EXTRA
    expected = Translator.from_run_dir(varied)(texts, beam_size=beam_size)
    assert len(set(expected)) >= 3  # input-dependent, so the equalities below mean something
    assert expected[len(samples)] == expected[len(samples) + 1] == ""  # no tokens -> ""
    uncached = Translator.from_run_dir(varied, use_cache=False)
    assert uncached(texts, beam_size=beam_size) == expected
    jit = Translator.from_run_dir(varied, jit_compile=True)
    assert jit(texts, beam_size=beam_size) == expected
    argv = [str(varied), "--beam-size", str(beam_size), *texts]
    assert translate_command(argv, capsys) == expected
    out = tmp_path / "served"
    assert main(["export", str(varied), "--out", str(out), "--beam-size", str(beam_size)]) == 0
    assert run_client(out / "1", texts)["translations"] == expected


def test_continuations_stop_at_max_length(varied):
    translator = Translator.from_run_dir(varied)
    tokens = translator.translate_tokens(["one two three", ""])
    assert tokens.shape == (2, translator.max_length - 1)
    assert not tokens[1].any()
    end = translator.target_tokenizer.end_id
    # a row ends with [END] or fills the max_length - 1 places, then only 0 follows
    row = list(tokens[0])
    if end in row:
        assert not any(row[row.index(end) + 1 :])
    short = translator(["one two three"], max_length=4)
    assert len(translator.translate_tokens(["x"])[0]) == translator.max_length - 1
    assert isinstance(short[0], str)


def copy_run(run, tmp_path):
    destination = tmp_path / "copy"
    shutil.copytree(run, destination)
    return destination


def test_a_missing_joint_vocabulary_is_named(run, tmp_path):
    broken = copy_run(run, tmp_path)
    (broken / "tokenizers" / "joint" / "vocab.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"missing tokenizers/joint/vocab\.txt\. Pass"):
        Translator.from_run_dir(broken)
    assert main(["translate", str(broken), "one"]) != 0


def test_a_damaged_joint_vocabulary_is_named(run, tmp_path):
    broken = copy_run(run, tmp_path)
    (broken / "tokenizers" / "joint" / "vocab.txt").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DamagedRunError, match=r"joint/vocab\.txt is damaged: not UTF-8"):
        Translator.from_run_dir(broken)


def test_damaged_model_and_config_are_named_for_either_layout(run, tiny_run, tmp_path):
    for name, source in (("decoder", run), ("encoder_decoder", tiny_run)):
        broken = tmp_path / name
        shutil.copytree(source, broken)
        (broken / "model.keras").write_bytes(b"not a zip file")
        with pytest.raises(DamagedRunError, match="model.keras is damaged"):
            Translator.from_run_dir(broken)
        (broken / "config.json").write_text("{not json")
        with pytest.raises(DamagedRunError, match="config.json is damaged"):
            Translator.from_run_dir(broken)


def test_an_encoder_decoder_run_without_target_vocabulary(tiny_run, tmp_path):
    broken = copy_run(tiny_run, tmp_path)
    shutil.rmtree(broken / "tokenizers" / "target")
    with pytest.raises(FileNotFoundError, match=r"missing tokenizers/target/vocab\.txt\. Pass"):
        Translator.from_run_dir(broken)


def test_a_run_that_does_not_translate_is_refused(tiny_run, tmp_path):
    other = copy_run(tiny_run, tmp_path)
    (other / "config.json").write_text(json.dumps({"architecture": "encoder"}))
    with pytest.raises(UserInputError, match="--architecture encoder, which does not translate"):
        Translator.from_run_dir(other)


def test_max_length_beyond_the_position_table(varied):
    with pytest.raises(ValueError, match=r"max_length=13 needs 25 positions.*<= 12"):
        Translator.from_run_dir(varied, max_length=13)
