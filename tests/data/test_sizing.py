"""Tests for keras_transformer.data.sizing: corpus statistics and the sizes chosen from them."""

import pytest

from keras_transformer.data import sizing
from keras_transformer.data.sizing import (
    MODEL_SIZES,
    CorpusStats,
    choose_max_length,
    choose_model,
    choose_vocab_size,
    choose_warmup,
    corpus_stats,
    plan_training,
)


def _corpus(num_pairs, source_words=10, target_words=12):
    source = " ".join(f"s{i}" for i in range(source_words))
    target = " ".join(f"t{i}" for i in range(target_words))
    return [(source, target)] * num_pairs


def test_corpus_stats_counts_words_chars_types_and_lengths():
    pairs = [("a b c", "x y"), ("a  b", "x\u00a0y z w"), ("d", "ü")]
    stats = corpus_stats(pairs)
    assert stats.num_pairs == 3
    assert (stats.source_words, stats.target_words) == (6, 7)
    assert (stats.source_chars, stats.target_chars) == (5 + 4 + 1, 3 + 7 + 1)
    assert (stats.source_types, stats.target_types) == (4, 5)
    assert stats.mean_source_words == 2.0
    assert stats.mean_target_words == pytest.approx(7 / 3, abs=0.01)
    assert (stats.p99_source_words, stats.p99_target_words) == (3, 4)


@pytest.mark.parametrize(
    "pairs, error, match",
    [
        ([], ValueError, "pairs is empty"),
        ([("a", "b"), ("c",)], TypeError, r"pairs\[1\]"),
        ([("a", 3)], TypeError, r"pairs\[0\]"),
    ],
)
def test_corpus_stats_rejects_bad_pairs(pairs, error, match):
    with pytest.raises(error, match=match):
        corpus_stats(pairs)


def test_vocab_size_grows_with_the_square_root_of_the_words_and_is_clamped():
    assert choose_vocab_size(corpus_stats(_corpus(10))) == 1000  # tiny: the floor
    # 700k words on both sides: 8000 pieces; four times the words: twice the pieces.
    assert choose_vocab_size(corpus_stats(_corpus(35_000, 10, 10))) == 8000
    assert choose_vocab_size(corpus_stats(_corpus(140_000, 10, 10))) == 16000
    assert choose_vocab_size(corpus_stats(_corpus(2_000_000, 10, 10))) == 32000  # the ceiling
    # A 6k-pair corpus of TED sentences (about 220k words): 4500.
    assert choose_vocab_size(corpus_stats(_corpus(6000, 18, 19))) == 4500


def test_max_length_covers_the_longest_side_in_pieces():
    assert choose_max_length(corpus_stats(_corpus(100, 4, 6))) == 16  # floor
    # 40 words -> 60 pieces + 2 = 62 -> 64
    assert choose_max_length(corpus_stats(_corpus(100, 40, 20))) == 64
    assert choose_max_length(corpus_stats(_corpus(100, 10, 400))) == 256  # ceiling


def test_model_is_small_on_a_short_budget_and_larger_when_budget_or_data_allow():
    ted = corpus_stats(_corpus(6000, 18, 19))
    assert choose_model(ted, budget_seconds=600) == MODEL_SIZES[0]
    assert choose_model(ted, budget_seconds=10 * 3600) == MODEL_SIZES[1]
    # Without a budget the data decides: a few thousand pairs -> small, millions -> large.
    assert choose_model(ted) == MODEL_SIZES[1]
    assert choose_model(corpus_stats(_corpus(100))) == MODEL_SIZES[0]
    assert choose_model(corpus_stats(_corpus(2_000_000, 20, 20))) == MODEL_SIZES[-1]


def test_approximate_parameters_matches_build_transformer():
    import keras_transformer as kt

    size = sizing.ModelSize("t", 2, 16, 2, 32)
    model = kt.models.build_transformer(
        50, 50, num_layers=2, d_model=16, num_heads=2, dff=32, max_length=8,
        share_embeddings=True,
    )  # fmt: skip
    assert sizing.approximate_parameters(size, 50) == pytest.approx(model.count_params(), rel=0.05)


def test_warmup_is_a_share_of_the_steps_within_bounds():
    assert choose_warmup(10_000) == 800
    assert choose_warmup(500) == 40
    assert choose_warmup(50) == 10
    assert choose_warmup(10**7) == 4000
    with pytest.raises(ValueError, match="total_steps=0"):
        choose_warmup(0)


def test_plan_with_a_budget_scales_the_steps_with_the_budget():
    stats = corpus_stats(_corpus(6000, 18, 19))
    short = plan_training(stats, budget_seconds=300)
    long = plan_training(stats, budget_seconds=600)
    assert long.estimated_steps == pytest.approx(2 * short.estimated_steps, abs=1)
    assert short.epochs == 1000  # the budget stops training, not the epochs
    assert short.warmup_steps == choose_warmup(short.estimated_steps)
    assert short.warmup_steps < short.estimated_steps
    assert (short.num_layers, short.d_model, short.vocab_size) == (2, 64, 4500)
    assert short.peak_learning_rate == pytest.approx(7e-4 * 2**0.5, rel=1e-3)
    assert short.budget_seconds == 300.0


def test_plan_without_a_budget_picks_epochs_from_the_data():
    small = plan_training(corpus_stats(_corpus(6400)))
    big = plan_training(corpus_stats(_corpus(640_000)))
    assert small.epochs == 30  # 100 steps an epoch: capped at 30 epochs
    assert big.epochs == 3  # 10,000 steps an epoch: at least 3
    assert small.budget_seconds is None


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(budget_seconds=0), "budget_seconds=0"),
        (dict(budget_seconds="10m"), "budget_seconds='10m'"),
        (dict(batch_size=0), "batch_size=0"),
    ],
)
def test_plan_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plan_training(corpus_stats(_corpus(10)), **kwargs)


def test_functions_reject_something_else_than_stats():
    with pytest.raises(TypeError, match="CorpusStats"):
        choose_vocab_size({"num_pairs": 3})
    assert CorpusStats._fields[0] == "num_pairs"
