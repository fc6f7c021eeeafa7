"""keras-transformer pretrain: masked-LM run directory, fine-tuning from it, errors."""

import json

import keras
import numpy as np
import pytest

from keras_transformer.cli import main
from keras_transformer.data.tasks.reviews import reviews_corpus
from keras_transformer.training.pretraining import PretrainConfig, split_corpus
from tests.helpers import RUN_FILES, TINY_RUN_ARGS, assert_files_written

TINY = [*TINY_RUN_ARGS, "--vocab-size", "300"]
FINE_TUNE = ["train", "--task", "reviews", "--architecture", "encoder"]


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """A tiny pre-training run on a corpus file, as a user would write it."""
    root = tmp_path_factory.mktemp("pretrain")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(reviews_corpus(600, seed=4)) + "\n\n", encoding="utf-8")
    out = root / "run"
    argv = ["pretrain", "--corpus", str(corpus), *TINY, "--epochs", "2", "--out", str(out)]
    argv += ["--finetune-task", "reviews", "--finetune-epochs", "2"]  # two train runs follow
    assert main(argv) == 0
    return out


def test_run_directory_and_reload(pretrained):
    assert_files_written(
        pretrained,
        [
            *RUN_FILES,
            "tokenizers/source/vocab.txt",
            "plots/learning_rate.png",
            "checkpoints/best.weights.h5",
        ],
    )
    config = json.loads((pretrained / "config.json").read_text())
    metrics = json.loads((pretrained / "metrics.json").read_text())
    assert config["objective"] == "masked-lm" and config["finetune_task"] == "reviews"
    assert config["num_train_texts"] + config["num_validation_texts"] == 600  # blank lines skipped
    assert 0.0 < metrics["validation_masked_accuracy"] <= 1.0
    model = keras.models.load_model(pretrained / "model.keras", safe_mode=True)
    assert model.count_params() == metrics["parameters"]
    assert not (pretrained / "backup").exists()  # finished runs leave no backup


def test_pretraining_is_train_with_the_masked_lm_recipe(pretrained):
    """One pipeline: `PretrainConfig` adds only its own fields to `TrainConfig`, picks the
    masked-LM recipe, and its run gets the entries `train` writes for every run."""
    import dataclasses

    from keras_transformer.training.config import TrainConfig
    from keras_transformer.training.recipes import recipe_name

    own = {f.name for f in dataclasses.fields(PretrainConfig)}
    own -= {f.name for f in dataclasses.fields(TrainConfig)}
    assert own == {
        "corpus",
        "num_sentences",
        "validation_fraction",
        "mask_rate",
        "finetune_task",
        "finetune_epochs",
        "finetune_batch_size",
        "finetune_learning_rate",
    }
    assert recipe_name(PretrainConfig()) == "masked_lm"
    metrics = json.loads((pretrained / "metrics.json").read_text())
    assert metrics["run_parts"] == 1 and metrics["architecture"] == "encoder"
    assert {"setup_seconds", "evaluation_seconds", "wall_seconds"} <= set(metrics)


def _weights(model, layer):
    return model.get_layer(layer).get_weights()


def test_pretrain_ends_with_two_train_runs_that_differ_only_in_their_start(pretrained):
    """`pretrain --finetune-task` fine-tunes through `train`: two run directories under
    `fine_tuning/`, the same settings but `--fresh-weights`, the pre-training run's vocabulary
    and sizes in both, its weights in one; the comparison in the pre-training's metrics."""
    from keras_transformer.training.fine_tuning import STARTS

    tuned = json.loads((pretrained / "metrics.json").read_text())["fine_tuning"]
    mlm = keras.models.load_model(pretrained / "model.keras", safe_mode=True)
    vocab = (pretrained / "tokenizers/source/vocab.txt").read_text()
    configs = {}
    for start in STARTS:
        run = pretrained / "fine_tuning" / start
        assert tuned[start]["run_dir"] == str(run)
        metrics = json.loads((run / "metrics.json").read_text())
        assert tuned[f"{start}_test_accuracy"] == metrics["test_accuracy"]
        assert metrics["epochs_run"] == 2 and metrics["fresh_weights"] == (start == "scratch")
        assert 0.0 <= metrics["train_accuracy"] <= 1.0 and metrics["num_train"] == 128
        configs[start] = json.loads((run / "config.json").read_text())
        assert configs[start]["model_sizes"]["d_model"] == 16  # the pre-training run's
        assert (run / "tokenizers/source/vocab.txt").read_text() == vocab
        classifier = keras.models.load_model(run / "model.keras", safe_mode=True)
        same = [
            np.array_equal(a, b)
            for a, b in zip(
                _weights(mlm, "encoder_embedding"),
                _weights(classifier, "encoder_embedding"),
                strict=True,
            )
        ]
        assert all(same) if start == "pretrained" else not any(same)  # frozen in both
    assert tuned["pretrained"]["transferred_layers"] == ["encoder_embedding", "encoder_layer_0"]
    assert tuned["scratch"]["transferred_layers"] == []
    differ = {k for k in configs["scratch"] if configs["scratch"][k] != configs["pretrained"][k]}
    assert differ <= {"fresh_weights", "out", "run_dir", "keras_version", "tensorflow_version"}
    assert "fresh_weights" in differ and tuned["task"] == "reviews" and tuned["num_test"] > 0


def test_pretrain_resumes_the_fine_tuning_it_did_not_finish(tmp_path, monkeypatch):
    """The fine-tuning is part of the job: interrupted there, the same command skips the
    finished pre-training and fine-tuning run and resumes the other; once all are finished, it
    is refused as every finished run is."""
    from keras_transformer.runs import RunDirectory
    from keras_transformer.training import pretraining, run

    trained, stop_at = [], []

    def fake_train(config, started=None):  # writes what a finished run leaves, nothing more
        trained.append(config.run_dir)
        if config.run_dir in stop_at:
            raise KeyboardInterrupt
        directory = RunDirectory(config.run_dir)
        directory.check_writable(config)  # what train checks first
        directory.make().write_json("config.json", dict(config.settings))
        metrics = {"test_accuracy": 0.5, "chance_accuracy": 0.5, "num_train": 8, "num_test": 4}
        directory.write_json("metrics.json", metrics)
        return dict(metrics)

    monkeypatch.setattr(pretraining, "train", fake_train)
    monkeypatch.setattr(run, "train", fake_train)
    config = PretrainConfig(out=str(tmp_path / "mlm"), finetune_task="reviews")
    arms = [str(tmp_path / "mlm" / "fine_tuning" / start) for start in ("pretrained", "scratch")]
    stop_at.append(arms[1])
    with pytest.raises(KeyboardInterrupt):
        pretraining.pretrain(config)
    assert trained == [config.run_dir, *arms]
    assert "fine_tuning" not in json.loads((tmp_path / "mlm" / "metrics.json").read_text())
    trained.clear(), stop_at.clear()
    metrics = pretraining.pretrain(config)  # the same command
    assert trained == [arms[1]]  # the pre-training and the first start were done
    assert metrics["fine_tuning"]["scratch"]["run_dir"] == arms[1]
    assert json.loads((tmp_path / "mlm" / "metrics.json").read_text()) == metrics
    with pytest.raises(FileExistsError, match="already holds a finished run"):
        pretraining.pretrain(config)


def test_fresh_weights_needs_init_from():
    from keras_transformer.errors import UserInputError
    from keras_transformer.training.config import TrainConfig

    with pytest.raises(UserInputError, match="--fresh-weights takes the vocabulary and sizes"):
        TrainConfig(task="reviews", architecture="encoder", fresh_weights=True)


def test_fine_tuning_starts_from_the_pretrained_encoder(pretrained, tmp_path):
    out = tmp_path / "reviews"
    argv = [
        *FINE_TUNE,
        "--init-from",
        str(pretrained),
        "--epochs",
        "1",
        "--batch-size",
        "32",
        "--learning-rate",
        "1e-3",
        "--out",
        str(out),
        "--d-model",
        "64",  # ignored: the sizes come from the pre-training run
        "--freeze-embeddings",
    ]
    assert main(argv) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    config = json.loads((out / "config.json").read_text())
    assert metrics["initialized_from"] == str(pretrained)
    assert metrics["transferred_layers"] == ["encoder_embedding", "encoder_layer_0"]
    assert config["model_sizes"]["d_model"] == 16
    source_vocab = (pretrained / "tokenizers/source/vocab.txt").read_text()
    assert (out / "tokenizers/source/vocab.txt").read_text() == source_vocab
    classifier = keras.models.load_model(out / "model.keras", safe_mode=True)
    assert classifier.get_layer("encoder_embedding").vocab_size == len(source_vocab.split())
    mlm = keras.models.load_model(pretrained / "model.keras", safe_mode=True)
    for frozen, trained in zip(
        mlm.get_layer("encoder_embedding").get_weights(),
        classifier.get_layer("encoder_embedding").get_weights(),
        strict=True,
    ):
        np.testing.assert_array_equal(frozen, trained)  # --freeze-embeddings kept them
    changed = [
        not np.array_equal(a, b)
        for a, b in zip(
            mlm.get_layer("encoder_layer_0").get_weights(),
            classifier.get_layer("encoder_layer_0").get_weights(),
            strict=True,
        )
    ]
    assert any(changed)  # the layers above were fine-tuned


def test_bad_input_is_one_line(pretrained, tmp_path, capsys):
    cases = [
        (
            ["pretrain", "--corpus", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "a")],
            "does not exist or is not a file",
        ),
        (
            ["pretrain", "--d-model", "30", "--num-heads", "4", "--out", str(tmp_path / "b")],
            "--d-model 30 is not divisible by --num-heads 4",
        ),
        (
            [
                *FINE_TUNE,
                "--init-from",
                str(tmp_path),
                "--out",
                str(tmp_path / "c"),
            ],
            "is not a finished pre-training run",
        ),
        (
            [
                "train",
                "--task",
                "numbers",
                "--init-from",
                str(pretrained),
                "--out",
                str(tmp_path / "d"),
            ],
            "is not a translation run (a pretrain run fine-tunes",
        ),
        (
            [
                *FINE_TUNE,
                "--learning-rate",
                "0",
                "--out",
                str(tmp_path / "e"),
            ],
            "--learning-rate: 0 is outside",
        ),
    ]
    for argv, message in cases:
        try:
            code = main(argv)
        except SystemExit as exit:  # a bad flag value is refused while parsing
            code = exit.code
        assert code == 2, argv
        error = capsys.readouterr().err.strip()
        assert message in error and "\n" not in error, error
    for name in "abcde":
        assert not (tmp_path / name).exists()


def test_overwrite_replaces_a_finished_run_of_another_size(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(reviews_corpus(200, seed=1)), encoding="utf-8")
    out = tmp_path / "run"
    base = ["pretrain", "--corpus", str(corpus), "--epochs", "1", "--out", str(out)]
    assert main([*base, *TINY]) == 0
    assert main([*base, *TINY]) == 2  # finished: refused without --overwrite
    bigger = [*TINY[:2], "--num-layers", "2", *TINY[4:]]
    assert main([*base, *bigger, "--overwrite"]) == 0  # not resumed from the old weights
    assert len((out / "history.csv").read_text().split()) == 2  # header + one epoch


def test_split_corpus_and_config_checks():
    texts = [str(i) for i in range(100)]
    train, validation = split_corpus(texts, 0.05, seed=2)
    assert len(validation) == 5 and not set(train) & set(validation)
    with pytest.raises(ValueError, match="at least 2"):
        split_corpus(["one"], 0.1, seed=0)
    with pytest.raises(ValueError, match=r"mask_rate must be a number in \(0, 1\)"):
        PretrainConfig(mask_rate=0.0)
    assert PretrainConfig().finetune_task == "reviews"
    assert PretrainConfig(corpus="my.txt").finetune_task is None
    assert np.isclose(PretrainConfig().mask_rate, 0.15)


@pytest.mark.parametrize(
    "setting, match",
    [
        ({"mixed_precision": "fp64"}, "mixed_precision='fp64'"),
        ({"jit_compile": "maybe"}, "jit_compile='maybe'"),
        ({"label_smoothing": 1.5}, "label_smoothing"),
        ({"time_budget": "soon"}, "time budget 'soon'"),
        ({"learning_rate": -1.0}, "learning_rate"),
    ],
)
def test_a_pretraining_config_runs_the_train_configs_checks(setting, match):
    # PretrainConfig.__post_init__ runs TrainConfig's: the same mistake, the same error.
    from keras_transformer.errors import UserInputError
    from keras_transformer.training.config import TrainConfig

    for make in (TrainConfig, PretrainConfig):
        with pytest.raises(UserInputError, match=match):
            make(**setting)
    assert PretrainConfig(time_budget="2m").time_budget == 120.0
    assert PretrainConfig().early_stopping_patience is None  # pre-training's, not TrainConfig's
