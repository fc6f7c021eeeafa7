"""Encoder-only and decoder-only runs: the "it" experiment and translation by prefix."""

import json

import numpy as np
import pytest

from keras_transformer import data, models
from keras_transformer.cli import main
from keras_transformer.data.batching.classification import it_token_arrays
from keras_transformer.data.batching.prefix import encode_prompts, prefix_dataset, prefix_sequences
from keras_transformer.inference import retrieval_accuracy
from keras_transformer.training import evaluation, recipes
from keras_transformer.training.config import TrainConfig
from keras_transformer.training.dual_encoder import load_sentence_encoder
from keras_transformer.training.recipes import translation
from keras_transformer.training.run import train
from tests.helpers import RUN_FILES, SMALL_MODEL_ARGS, TINY_MODEL_ARGS, assert_files_written

SMALL = {
    "num_layers": 1,
    "d_model": 32,
    "num_heads": 2,
    "dff": 64,
    "batch_size": 32,
    "warmup_steps": 50,
    "vocab_size": 300,
    "early_stopping_patience": 10,
}


@pytest.fixture(scope="module")
def it_runs(tmp_path_factory):
    """The same small model and training, with and without the causal mask."""
    runs = {}
    for architecture in ("encoder", "decoder-only"):
        out = tmp_path_factory.mktemp("it") / architecture
        config = TrainConfig(
            task="it-referent",
            architecture=architecture,
            num_train=1200,
            num_validation=100,
            num_test=200,
            epochs=2,
            out=str(out),
            **SMALL,
        )
        runs[architecture] = (out, train(config))
    return runs


def test_encoder_resolves_it_and_causal_decoder_cannot(it_runs):
    encoder = it_runs["encoder"][1]["test_accuracy"]
    causal = it_runs["decoder-only"][1]["test_accuracy"]
    assert encoder >= 0.95, encoder  # the bar for the encoder
    assert causal <= 0.7, causal  # chance is 0.5: at "it" the deciding word is unseen
    assert encoder - causal >= 0.25
    assert it_runs["encoder"][1]["parameters"] == it_runs["decoder-only"][1]["parameters"]


def test_it_run_directory(it_runs):
    for architecture, (out, _) in it_runs.items():
        assert_files_written(
            out, [*RUN_FILES, "tokenizers/source/vocab.txt", "plots/it_attention.png"]
        )
        saved = json.loads((out / "metrics.json").read_text())
        assert saved["architecture"] == architecture and saved["num_test"] == 200
        assert 0.4 < saved["chance_accuracy"] < 0.6
        assert json.loads((out / "config.json").read_text())["architecture"] == architecture


def test_causal_token_classifier_at_it_ignores_the_words_after_it():
    tokenizer = data.WordPieceTokenizer.learn(
        [s for s, _ in data.load_task("it-referent", num_train=300).train], 300
    )
    pairs = [
        ("The dog didn't cross the road because it was too tired .", "dog"),
        ("The dog didn't cross the road because it was too wide .", "road"),
    ]
    ids, labels, positions = it_token_arrays(pairs, tokenizer, 32)
    assert labels[0, positions[0]] == 1 and labels[1, positions[1]] == 2
    kwargs = {"num_layers": 1, "d_model": 16, "num_heads": 2, "dff": 32, "dropout": 0.0}
    for causal in (False, True):
        model = models.build_token_classifier(tokenizer.vocab_size, 3, causal=causal, **kwargs)
        logits = np.asarray(model(ids))
        at_it = logits[[0, 1], positions]
        if causal:
            np.testing.assert_allclose(at_it[0], at_it[1], atol=1e-5)
        else:
            assert np.abs(at_it[0] - at_it[1]).max() > 1e-4


def test_prefix_batches_are_reshuffled_every_epoch():
    pairs = [(f"a{i} b", f"c d{i}") for i in range(40)]
    tokenizer = data.WordPieceTokenizer.learn([text for pair in pairs for text in pair], 200)
    ds = prefix_dataset(pairs, tokenizer, batch_size=8, max_length=8, shuffle=True)
    epochs = [[x.numpy().tolist() for x, _ in ds] for _ in range(2)]
    assert len(epochs[0]) == 5 and epochs[0] != epochs[1]
    assert sorted(map(str, sum(epochs[0], []))) == sorted(map(str, sum(epochs[1], [])))


def test_prefix_sequences_train_on_the_target_only():
    tokenizer = data.WordPieceTokenizer.learn(["one two three", "eins zwei drei"], 60)
    inputs, labels = prefix_sequences([("one two", "zwei eins"), ("three", "drei")], tokenizer, 16)
    for row_in, row_lab in zip(inputs.to_list(), labels.to_list(), strict=True):
        assert len(row_in) == len(row_lab)
        sep = row_in.index(tokenizer.sep_id)
        assert all(label == 0 for label in row_lab[:sep])
        assert row_lab[sep:-1] == row_in[sep + 1 :] and row_lab[-1] == tokenizer.end_id
    prompts = encode_prompts(["one two", "three"], tokenizer, 16)
    for row_prompt, row_in in zip(prompts.to_list(), inputs.to_list(), strict=True):
        sep = row_in.index(tokenizer.sep_id)
        assert [t for t in row_prompt if t] == row_in[: sep + 1]  # [START] source [SEP]


def test_decoder_only_numbers_run_via_cli(tmp_path):
    out = tmp_path / "numbers_decoder_only"
    args = [
        "train",
        "--task",
        "numbers",
        "--architecture",
        "decoder-only",
        "--num-train",
        "256",
        "--num-validation",
        "32",
        "--num-test",
        "32",
        "--epochs",
        "1",
        *TINY_MODEL_ARGS,
        "--batch-size",
        "32",
        "--max-length",
        "24",
        "--learning-rate",
        "0.02",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    for key in (
        "test_exact_match",
        "test_token_accuracy",
        "test_bleu",
        "test_chrf",
        "train_seconds",
        "train_tokens_per_second",
        "parameters",
    ):
        assert key in metrics, key
    assert 0 <= metrics["test_exact_match"] <= 1 and metrics["test_token_accuracy"] > 0.05
    assert metrics["num_test"] == 32 and len(metrics["samples"]) == 5
    assert (out / "tokenizers" / "joint" / "vocab.txt").is_file()
    history = (out / "history.csv").read_text().splitlines()
    assert len(history) == 2  # header + 1 epoch


def test_decoder_only_has_about_half_the_parameters_of_encoder_decoder():
    sizes = {"num_layers": 2, "d_model": 64, "num_heads": 4, "dff": 128}
    decoder_only = models.build_language_model(500, **sizes).count_params()
    encoder_decoder = models.build_transformer(500, 500, **sizes).count_params()
    assert 0.35 < decoder_only / encoder_decoder < 0.6


def test_architecture_errors():
    with pytest.raises(ValueError, match="architecture='encoder' cannot train task='numbers'"):
        TrainConfig(task="numbers", architecture="encoder")
    with pytest.raises(ValueError, match="is a classification task"):
        TrainConfig(task="it-referent")
    with pytest.raises(ValueError, match="architecture='rnn' is not known"):
        TrainConfig(architecture="rnn")
    assert TrainConfig(task="it-referent", architecture="encoder").run_dir.endswith(
        "it-referent_encoder"
    )
    assert TrainConfig().run_dir.endswith("numbers_en_de")  # the default path is unchanged


def test_dual_encoder_retrieves_held_out_translations(tmp_path):
    out = tmp_path / "dual"
    args = [
        "train",
        "--task",
        "numbers",
        "--architecture",
        "dual-encoder",
        "--num-train",
        "1024",
        "--num-validation",
        "64",
        "--num-test",
        "100",
        "--epochs",
        "4",
        *SMALL_MODEL_ARGS,
        "--batch-size",
        "32",
        "--max-length",
        "32",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["chance_accuracy"] == pytest.approx(0.01)
    # the right German number among the 100 held-out ones (none seen in training)
    assert metrics["test_retrieval_accuracy_at_1"] >= 0.3, metrics
    search = load_sentence_encoder(str(out))
    task = data.load_task("numbers", num_train=1024, num_validation=64, num_test=100, seed=0)
    sources, targets = [s for s, _ in task.test], [t for _, t in task.test]
    assert retrieval_accuracy(search, sources, targets) == pytest.approx(
        metrics["test_retrieval_accuracy_at_1"]
    )
    with pytest.raises(ValueError, match="not a pair task"):
        TrainConfig(task="it-referent", architecture="dual-encoder")


def test_exact_match_compares_normalised_references():
    """num2words spells Kannada and Telugu decomposed; the tokenizer's NFC output must match."""
    import unicodedata

    from num2words import num2words

    reference = num2words(1234, lang="te")
    assert not unicodedata.is_normalized("NFC", reference)  # the case this test is about

    class Evaluated:
        def evaluate(self, *args, **kwargs):
            return {"masked_accuracy": 1.0, "loss": 0.0}

    class Fit:
        epochs_run, seconds = 1, 1.0

    predicted = unicodedata.normalize("NFC", reference)  # what detokenize returns
    pairs = [("one thousand two hundred and thirty-four", reference + "\u00a0"), ("x", "y")]
    metrics = evaluation.translation_metrics(
        Evaluated(), None, pairs, lambda sources: [predicted, "z"], 10, Fit()
    )
    assert metrics["test_exact_match"] == 0.5
    assert metrics["samples"][0]["reference"] == predicted


def test_bleu_is_left_out_with_its_reason_where_references_are_one_word():
    # The numbers task into German: one word per number, so no 4-gram exists and BLEU is 0.0
    # even for perfect translations; chrF and exact match still speak.
    references = ["dreihundertsechs", "vierzigtausendeins", "elf"]
    scores = evaluation.bleu_score(references, references)
    assert scores["test_bleu"] is None
    assert "3 of the 3 test references are shorter than 4 words" in scores["test_bleu_left_out"]
    assert "test_chrf" in scores["test_bleu_left_out"]
    sentences = ["the cat sat on the mat", "a dog ran in the park today"]
    assert evaluation.bleu_score(sentences, sentences) == {"test_bleu": pytest.approx(100.0)}

    class Evaluated:
        def evaluate(self, *args, **kwargs):
            return {"masked_accuracy": 1.0, "loss": 0.0}

    class Fit:
        epochs_run, seconds = 1, 1.0

    pairs = [("three hundred and six", "dreihundertsechs"), ("eleven", "elf")]
    metrics = evaluation.translation_metrics(
        Evaluated(), None, pairs, lambda sources: ["dreihundertsechs", "elf"], 10, Fit()
    )
    assert metrics["test_bleu"] is None and metrics["test_exact_match"] == 1.0
    assert metrics["test_chrf"] == pytest.approx(100.0)


def test_train_prints_why_bleu_is_left_out(monkeypatch, capsys, tmp_path):
    import argparse

    from keras_transformer.commands.train import run_command
    from keras_transformer.training.config import TrainConfig

    reason = "2 of the 2 test references are shorter than 4 words"
    metrics = {"test_bleu": None, "test_bleu_left_out": reason, "test_chrf": 99.0}
    args = argparse.Namespace(command="train", func=None, out=str(tmp_path / "r"))
    run_command(TrainConfig, lambda config: metrics, args, "mixed_precision", ("test_bleu",))
    assert f"test_bleu: left out: {reason}\n" in capsys.readouterr().out


@pytest.mark.parametrize(
    "choice, test, seconds, budget, expected",
    [
        (500, 1000, 10_000.0, None, (500, 1000)),  # no budget: the whole evaluation
        (500, 1000, 48.0, 600.0, (500, 1000)),  # exactly the share
        (500, 1000, 192.0, 600.0, (128, 256)),  # a quarter, under the floors
        (500, 1000, 64.0, 600.0, (256, 640)),  # 48 of 64 s: 3/4 (375, 750) in whole chunks
        (100, 200, 600.0, 600.0, (100, 200)),  # below the floors already: never grown
    ],
)
def test_a_budget_scales_the_evaluation_to_its_share(choice, test, seconds, budget, expected):
    from keras_transformer.training.evaluation import EVALUATION_SHARE, fit_evaluation

    assert EVALUATION_SHARE == 0.08
    assert fit_evaluation(choice, test, seconds, budget) == expected


def test_the_evaluation_timed_again_with_shorter_decoding_gets_its_pairs_back(monkeypatch, caplog):
    # Before training every search is timed at 10 s a chunk (an untrained model decodes to
    # max_length): the evaluation (two greedy searches to choose the weights, then the
    # candidates on validation pairs: greedy search and one beam search its alphas rank; one
    # search on test pairs) would take far more than 8 % of the budget, so fewer pairs.
    # Timed again (trained weights stop early) at 0.1 s a chunk, it fits: all pairs again, and
    # the estimate is the new timing times the margin, never above the first one.
    config = TrainConfig(
        task="numbers", num_train=600, num_validation=300, num_test=400, time_budget=600.0, **SMALL
    )
    task = recipes.load_data(config)
    recipe = recipes.prepare_recipe(config, task)
    model = recipe.build()
    timings = iter([10.0] * 4 + [0.1] * 2)  # compile + time greedy and beam, then again
    monkeypatch.setattr(evaluation, "_timed", lambda translate, chunk: next(timings))
    chunks = [-(-n // evaluation.EVAL_CHUNK) for n in (300, 400)]  # validation, test
    with caplog.at_level("INFO", logger=evaluation.logger.name):
        first = recipe.prepare_evaluation(model)
        assert first == pytest.approx(10.0 * chunks[0] * (4 * 128 + 256) / 300)  # the floors
        assert "evaluation on 128 validation and 256 test pairs (of 300 and 400)" in caplog.text
        again = recipe.remeasure_evaluation(model)
    margin = evaluation.REMEASURE_MARGIN
    assert again == pytest.approx(0.1 * margin * chunks[0] * (4 * 300 + 400) / 300)
    assert "evaluation on all 300 validation and 400 test pairs: timed again" in caplog.text


@pytest.mark.parametrize("lowest, last, chosen", [(10.0, 20.0, "last"), (20.0, 10.0, None)])
def test_the_weights_kept_are_those_that_translate_the_validation_pairs_better(
    monkeypatch, tmp_path, lowest, last, chosen
):
    # The model holds the checkpoint with the lowest validation loss; the weights training ended
    # with are in another file. Greedy BLEU on the validation pairs decides (here faked), the
    # kept ones become best.weights.h5 (what a resumed run loads) and the last file goes.
    from keras_transformer.training.fitting import FitResult

    config = TrainConfig(task="numbers", num_train=600, num_validation=50, num_test=50, **SMALL)
    task = recipes.load_data(config)
    recipe = recipes.prepare_recipe(config, task)
    model = recipe.build()
    best, last_path = str(tmp_path / "best.weights.h5"), str(tmp_path / "last.weights.h5")
    model.save_weights(best)
    lowest_weights = model.get_weights()
    model.set_weights([w + 1.0 for w in lowest_weights])
    model.save_weights(last_path)
    last_weights = model.get_weights()
    model.set_weights(lowest_weights)
    scores = iter([lowest, last])
    monkeypatch.setattr(
        translation, "validation_score", lambda translate, pairs: ("BLEU", next(scores))
    )
    fit = FitResult(1.0, 2, False, best, 10, None, last_path)
    record = recipe.choose_weights(model, fit)["weights"]
    expected = last_weights if chosen == "last" else lowest_weights
    for held, wanted in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_array_equal(held, wanted)
    model.set_weights(lowest_weights if chosen == "last" else last_weights)
    model.load_weights(best)  # the file a resumed run loads holds the same choice
    for held, wanted in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_array_equal(held, wanted)
    assert record["chosen"] == (chosen or "lowest validation loss")
    assert (record["lowest_validation_loss"], record["last"]) == (lowest, last)
    assert not (tmp_path / "last.weights.h5").exists()
    no_last = FitResult(1.0, 2, False, best, 10, None, None)  # the last epoch was the best
    assert recipe.choose_weights(model, no_last) == {}


@pytest.mark.parametrize("jit_compile", ["off", "on"])
def test_translation_batches_pad_to_the_batch_without_xla_and_to_buckets_with_it(jit_compile):
    config = TrainConfig(
        task="numbers",
        num_train=400,
        num_validation=40,
        num_test=40,
        jit_compile=jit_compile,
        **SMALL,
    )
    recipe = recipes.prepare_recipe(config, recipes.load_data(config))
    shapes = set(data.dataset_shapes(recipe.plan.max_length))
    for inputs, labels in recipe.train_ds:
        source, target = inputs["source"].numpy(), inputs["target"].numpy()
        longest = (int((source != 0).sum(1).max()), int((labels.numpy() != 0).sum(1).max()))
        if jit_compile == "on":  # one of the few shapes XLA compiles
            assert (source.shape[1], target.shape[1]) in shapes
        else:  # no column of padding only
            assert (source.shape[1], target.shape[1]) == longest
