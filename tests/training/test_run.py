"""End to end: `keras-transformer train` on a tiny numbers task writes a full run directory."""

import csv
import json
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

from keras_transformer import data
from keras_transformer.cli import main
from tests.helpers import RUN_FILES, TINY_RUN_ARGS, assert_files_written

TINY = [
    "--num-train",
    "400",
    "--num-validation",
    "64",
    "--num-test",
    "48",
    "--epochs",
    "2",
    *TINY_RUN_ARGS,
]


RUN_WARNINGS: list[str] = []  # what the `run_dir` run warned


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "numbers"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        argv = ["train", *TINY, "--source-lang", "en", "--target-lang", "fr", "--out", str(out)]
        assert main(argv) == 0
    RUN_WARNINGS.extend(str(warning.message) for warning in caught)
    return out


def test_evaluation_does_not_warn_that_its_input_ran_out(run_dir):
    # Keras warns "Your input ran out of data" on datasets of unknown length (the test split).
    assert not [text for text in RUN_WARNINGS if "ran out of data" in text]


def test_run_directory_has_every_file(run_dir):
    assert_files_written(
        run_dir,
        [
            *RUN_FILES,
            "tokenizers/source/vocab.txt",
            "tokenizers/target/vocab.txt",
            "plots/learning_rate.png",
            "plots/cross_attention.png",
            "checkpoints/best.weights.h5",
        ],
    )
    assert any((run_dir / "logs").rglob("events.out.tfevents*"))


def test_history_config_and_metrics(run_dir):
    with open(run_dir / "history.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(r["epoch"]) for r in rows] == [0, 1]
    assert {"loss", "val_loss", "masked_accuracy", "val_masked_accuracy"} <= set(rows[0])
    config = json.loads((run_dir / "config.json").read_text())
    assert config["target_lang"] == "fr" and config["d_model"] == 16
    metrics = json.loads((run_dir / "metrics.json").read_text())
    for key in ("test_exact_match", "test_token_accuracy", "test_bleu", "test_chrf"):
        assert 0.0 <= metrics[key] <= (100.0 if key in ("test_bleu", "test_chrf") else 1.0)
    assert metrics["train_seconds"] > 0 and metrics["train_tokens_per_second"] > 0
    assert metrics["num_test"] == 48
    model = keras.models.load_model(run_dir / "model.keras", safe_mode=True)
    assert metrics["parameters"] == model.count_params()
    assert all(set(s) == {"source", "reference", "prediction"} for s in metrics["samples"])
    assert metrics["test_translated"] == 48 and metrics["test_length_ratio"] > 0


def test_the_search_chosen_on_validation_is_kept_for_translate(run_dir):
    from keras_transformer.inference import Translator
    from keras_transformer.inference.decoding import CANDIDATES, Decoding

    metrics = json.loads((run_dir / "metrics.json").read_text())
    chosen = json.loads((run_dir / "decoding.json").read_text())
    assert chosen == metrics["decoding"]
    assert chosen["chosen_on"] == "the first 64 validation pairs"
    tried = [(s["beam_size"], s["alpha"]) for s in chosen["scores"]]
    assert tried == [tuple(d) for d in CANDIDATES]
    best = max(s[chosen["metric"]] for s in chosen["scores"])
    winner = next(s for s in chosen["scores"] if s[chosen["metric"]] == best)
    assert (chosen["beam_size"], chosen["alpha"]) == (winner["beam_size"], winner["alpha"])
    translator = Translator.from_run_dir(run_dir)
    assert translator.decoding == Decoding(chosen["beam_size"], chosen["alpha"])


def test_reloaded_model_reproduces_test_token_accuracy(run_dir):
    metrics = json.loads((run_dir / "metrics.json").read_text())
    model = keras.models.load_model(run_dir / "model.keras", safe_mode=True)
    src = data.WordPieceTokenizer.load(run_dir / "tokenizers/source")
    tgt = data.WordPieceTokenizer.load(run_dir / "tokenizers/target")
    task = data.load_task(
        "numbers",
        source_lang="en",
        target_lang="fr",
        num_train=400,
        num_validation=64,
        num_test=48,
        seed=0,
    )
    test = data.make_dataset(
        task.test, src, tgt, batch_size=32, max_length=24, shuffle=False, drop_remainder=False
    )
    accuracy = model.evaluate(test, verbose=0, return_dict=True)["masked_accuracy"]
    assert accuracy == pytest.approx(metrics["test_token_accuracy"], abs=1e-6)


def test_finished_run_is_not_overwritten(run_dir, capsys):
    assert main(["train", *TINY, "--out", str(run_dir)]) == 2
    assert "already holds a finished run" in capsys.readouterr().err


def test_bad_arguments_give_one_line_errors():
    result = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", "train", "--task", "nonsense"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert lines and "nonsense" in lines[-1] and "Traceback" not in result.stderr


def test_invalid_config_values():
    from keras_transformer.training.config import TrainConfig

    with pytest.raises(ValueError, match="jit_compile"):
        TrainConfig(jit_compile="maybe")
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="max_length"):
        TrainConfig(max_length=2)
    np.testing.assert_equal(TrainConfig().run_dir, "runs/numbers_en_de")


@pytest.mark.parametrize("precision", ["fp16"])  # bf16 takes the same path, unscaled
def test_mixed_precision_runs(precision, tmp_path):
    out = tmp_path / precision
    argv = ["train", *TINY, "--epochs", "1", "--mixed-precision", precision, "--jit-compile", "off"]
    assert main([*argv, "--out", str(out)]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["mixed_precision_resolved"] == precision
    assert config["jit_compile_resolved"] is False
    assert np.isfinite(json.loads((out / "metrics.json").read_text())["test_loss"])
    assert keras.mixed_precision.global_policy().name == "float32"  # restored after the run
    model = keras.models.load_model(out / "model.keras", safe_mode=True)
    ids = np.array([[2, 7, 8, 3]], "int32")
    logits = model({"source": ids, "target": ids[:, :3]})
    assert logits.dtype == "float32"  # logits stay float32 under mixed precision
    policy = "mixed_float16" if precision == "fp16" else "mixed_bfloat16"
    assert model.get_layer("encoder_layer_0").dtype_policy.name == policy


def test_auto_precision_is_float32_on_cpu():
    from keras_transformer.training.devices import resolve_precision

    assert resolve_precision("auto") is None  # the suite runs without GPUs
    assert resolve_precision("bf16") == "bf16" and resolve_precision("none") is None


def test_the_model_trains_under_xla():
    """`--jit-compile on` compiles the train step with XLA (one bucket shape here)."""
    from keras_transformer.models import build_transformer
    from keras_transformer.training import MaskedSparseCategoricalCrossentropy
    from keras_transformer.training.devices import use_xla

    assert use_xla("on") and not use_xla("off") and not use_xla("auto")  # no GPU here
    model = build_transformer(30, 30, num_layers=1, d_model=16, num_heads=2, dff=32)
    model.compile("adam", MaskedSparseCategoricalCrossentropy(), jit_compile=True)
    rng = np.random.default_rng(0)
    ids = {"source": rng.integers(1, 30, (4, 6)), "target": rng.integers(1, 30, (4, 5))}
    labels = rng.integers(1, 30, (4, 5))
    first = float(model.train_on_batch(ids, labels))
    for _ in range(5):
        last = float(model.train_on_batch(ids, labels))
    assert np.isfinite(first) and last < first


def test_metrics_samples_are_what_translate_and_the_export_return(run_dir, tmp_path, capsys):
    """One decoder: metrics.json's predictions = `Translator` = `translate` = the SavedModel."""
    import tensorflow as tf

    from keras_transformer.export import export_translator
    from keras_transformer.inference import Translator

    samples = json.loads((run_dir / "metrics.json").read_text())["samples"]
    sources = [sample["source"] for sample in samples]
    predictions = [sample["prediction"] for sample in samples]
    assert len(sources) == 5
    translator = Translator.from_run_dir(run_dir)
    assert translator(sources) == predictions
    capsys.readouterr()
    assert main(["translate", str(run_dir), *sources]) == 0
    assert capsys.readouterr().out.splitlines() == predictions
    served = tf.saved_model.load(export_translator(translator, tmp_path / "export"))
    outputs = served.signatures["serving_default"](text=tf.constant(sources))["translation"]
    assert [t.decode("utf-8") for t in outputs.numpy()] == predictions


def test_train_help_imports_no_tensorflow():
    code = (
        "import sys\nfrom keras_transformer.cli import main\n"
        "try:\n    main(['train', '--help'])\nexcept SystemExit:\n    pass\n"
        "print('tensorflow' in sys.modules, 'matplotlib' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.split()[-2:] == ["False", "False"]
