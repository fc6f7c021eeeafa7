"""Tests for keras_transformer.training.planning, the one sizing module: corpus statistics,
vocabulary size and length, and the model rung, schedule and epochs of a run."""

import pytest

from keras_transformer.training import plan as plan_module
from keras_transformer.training import planning
from keras_transformer.training.planning import (
    MODEL_SIZES,
    CorpusStats,
    choose_max_length,
    choose_model,
    choose_vocab_size,
    choose_warmup,
    corpus_stats,
    plan_training,
    target_tokens,
)
from tests.helpers import repeated_corpus


def _rung(stats, budget_seconds=None):
    return choose_model(stats, budget_seconds=budget_seconds).name


def test_model_is_small_on_a_short_budget_and_larger_when_budget_or_data_allow():
    assert [size.name for size in MODEL_SIZES] == ["tiny", "mini", "small", "base", "large"]
    ted = corpus_stats(repeated_corpus(6000, 18, 19))
    # 6k TED pairs: the 2 x 64 rung at any budget. Larger rungs have more than PARAMS_PER_TOKEN
    # parameters per target piece here; on a 29k-pair caption corpus 3 x 128 scored 3.4 BLEU
    # below 2 x 64 at 30 minutes (planning.PARAMS_PER_TOKEN).
    assert _rung(ted, 600) == _rung(ted, 10 * 3600) == _rung(ted) == "tiny"
    # 100k pairs of 10 words: 3 x 128 once the budget buys MIN_EPOCHS passes, and without one.
    large = corpus_stats(repeated_corpus(100_000, 10, 10))
    assert _rung(large, 1800) == "tiny"  # 2.0 planned passes of 3 x 128, 3.6 of 2 x 128
    assert _rung(large, 3600) == _rung(large) == "small"
    # Measured (docs/performance.md): Anki-sized corpora get 2 x 64 for ten minutes and
    # 3 x 128 for thirty, which scored 3-4 BLEU more there. Europarl-sized ones (20-30k long
    # pairs, 550-600k target pieces) get 2 x 128 for thirty minutes (RUNG_MIN_EPOCHS: 5.08
    # planned passes; 3 x 128 has too many parameters a piece) and 2 x 64 for ten.
    for pairs, words in ((95_000, 6), (135_000, 6)):
        stats = corpus_stats(repeated_corpus(pairs, words, words))
        assert _rung(stats, 600) == "tiny" and _rung(stats, 1800) == "small", (pairs, words)
    for pairs, words in ((21_000, 18), (26_000, 14)):
        stats = corpus_stats(repeated_corpus(pairs, words, words))
        assert _rung(stats, 600) == "tiny", (pairs, words)
        assert _rung(stats, 1800) == _rung(stats, 7200) == "mini", (pairs, words)
    # Fewer pieces than PARAMS_PER_TOKEN admits for 2 x 128: 2 x 64 at any budget.
    fewer = corpus_stats(repeated_corpus(24_000, 10, 10))
    assert _rung(fewer, 1800) == _rung(fewer, 7200) == "tiny"
    # Ten minutes never picks a larger rung: the smallest corpus PARAMS_PER_TOKEN admits for
    # one gets fewer planned passes than it needs (docs/performance.md, "Thirty minutes").
    for size in MODEL_SIZES[1:]:
        vocab = planning.RUNG_VOCAB_CAPS.get(size.name, planning.vocab_cap(size))
        fewest = planning.model_parameters(size, vocab) / planning.PARAMS_PER_TOKEN
        passes = 600 * planning.rung_pace(size, vocab) / fewest
        assert passes < planning.RUNG_MIN_EPOCHS.get(size.name, planning.MIN_EPOCHS), size
    # Without a budget the data decides: a hundred pairs -> 2 x 64, millions -> 6 x 512.
    assert _rung(corpus_stats(repeated_corpus(100))) == "tiny"
    assert choose_model(corpus_stats(repeated_corpus(2_000_000, 20, 20))) == MODEL_SIZES[-1]


def test_model_parameters_are_those_of_build_transformer():
    import keras_transformer as kt

    size = planning.ModelSize("t", 2, 16, 2, 32)
    model = kt.models.build_transformer(
        50,
        50,
        num_layers=2,
        d_model=16,
        num_heads=2,
        dff=32,
        max_length=8,
        share_embeddings=True,
    )
    assert planning.model_parameters(size, 50) == model.count_params()


def test_warmup_is_a_share_of_the_steps_within_bounds():
    assert choose_warmup(10_000) == 800
    assert choose_warmup(500) == 40
    assert choose_warmup(50) == 10
    assert choose_warmup(10**7) == 4000
    with pytest.raises(ValueError, match="total_steps=0"):
        choose_warmup(0)


def test_plan_with_a_budget_scales_the_steps_with_the_budget():
    stats = corpus_stats(repeated_corpus(6000, 18, 19))
    short = plan_training(stats, budget_seconds=300)
    long = plan_training(stats, budget_seconds=600)
    assert long.estimated_steps == pytest.approx(2 * short.estimated_steps, abs=1)
    assert short.epochs == 1000  # the budget stops training, not the epochs
    assert short.warmup_steps == choose_warmup(short.estimated_steps)
    assert short.warmup_steps < short.estimated_steps
    assert (short.num_layers, short.d_model, short.vocab_size) == (2, 64, 3500)  # tiny's cap
    assert short.peak_learning_rate == planning.RUNG_PEAKS["tiny"] == 2e-3  # measured
    assert short.budget_seconds == 300.0


@pytest.mark.parametrize(
    "pairs, words, budget", [(6000, 18, 600), (25_000, 14, 1800), (500, 6, 60)]
)
def test_the_plan_and_the_schedule_count_steps_at_one_pace(pairs, words, budget):
    # The passes (so the dropout) and the rung come from plan_training, the warm-up from
    # plan_schedule: both read planning.pace, so they plan the same steps.
    stats = corpus_stats(repeated_corpus(pairs, words, words))
    plan = plan_training(stats, budget_seconds=budget)
    tokens = planning.batch_tokens(plan.batch_size, stats.target_words, stats.num_pairs)
    schedule = planning.plan_schedule(
        "tsv",
        plan._asdict(),
        budget_seconds=budget,
        warmup_steps=None,
        steps_per_epoch=pairs // plan.batch_size,
        tokens_per_batch=tokens,
    )
    assert schedule.total_steps == plan.estimated_steps
    assert schedule.warmup_steps == plan.warmup_steps
    assert plan.passes == round(plan.estimated_steps / (pairs // plan.batch_size), 2)


def test_pace_scales_the_measured_reference_by_multiply_adds():
    size, vocab, measured = planning.PACE_REFERENCE
    assert planning.rung_pace(size, vocab) == pytest.approx(measured)
    tiny = MODEL_SIZES[0]
    # Half the multiply-adds a token: twice the pace.
    work = planning.multiply_adds(tiny.num_layers, tiny.d_model, tiny.dff, 3500)
    reference = planning.multiply_adds(size.num_layers, size.d_model, size.dff, vocab)
    assert planning.rung_pace(tiny, 3500) == pytest.approx(measured * reference / work)
    # A smaller output layer is faster; a larger rung is slower.
    assert planning.rung_pace(tiny, 1000) > planning.rung_pace(tiny, 3500)
    paces = [planning.rung_pace(size, 4000) for size in MODEL_SIZES]
    assert paces == sorted(paces, reverse=True)


def test_plan_without_a_budget_picks_epochs_from_the_data():
    small = plan_training(corpus_stats(repeated_corpus(6400)))
    big = plan_training(corpus_stats(repeated_corpus(640_000)))
    assert small.epochs == 30  # 100 steps an epoch: capped at 30 epochs
    assert big.epochs == 3  # 10,000 steps an epoch: at least 3
    assert small.budget_seconds is None


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(budget_seconds=0), ValueError, "budget_seconds=0"),
        (dict(budget_seconds="10m"), TypeError, "budget_seconds='10m'"),
        (dict(batch_size=0), ValueError, "batch_size=0"),
        (dict(batch_size=2.0), TypeError, "batch_size=2.0"),
    ],
)
def test_plan_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        plan_training(corpus_stats(repeated_corpus(10)), **kwargs)


def _schedule(task="numbers", warmup_steps=None, **sizes):
    sizes = dict(dict(epochs=4, num_layers=2, d_model=128, num_heads=8, dff=512), **sizes)
    return planning.plan_schedule(
        task,
        {"vocab_size": 2000, **sizes},
        budget_seconds=None,
        warmup_steps=warmup_steps,
        steps_per_epoch=250,
        tokens_per_batch=1000.0,
    )


def test_schedule_plan_is_returned():
    plan = _schedule(d_model=512)
    assert plan == (0.00035, 80, 1000)  # 8 % of 4 x 250 steps; 7e-4 * sqrt(128 / 512)
    assert _schedule(warmup_steps=7).warmup_steps == 7


def test_vocabulary_is_the_corpus_size_capped_by_what_the_rung_can_afford():
    # The output projection of the chosen size costs at most what its layers cost.
    for size in MODEL_SIZES:
        cap = planning.vocab_cap(size)
        layers = planning.layer_multiply_adds(size.num_layers, size.d_model, size.dff)
        assert size.d_model * cap <= layers < size.d_model * (cap + 500)  # the largest such
    # 95k Anki-sized corpus (1.14M words): the data asks 10,000, the 2 x 64 rung affords 3,500.
    anki = corpus_stats(repeated_corpus(95_000, 6, 6))
    assert choose_vocab_size(anki) == 10_000
    plan = plan_training(anki, budget_seconds=600)
    assert (plan.d_model, plan.vocab_size) == (64, 3500)
    # A small corpus keeps its own (smaller) size; a larger rung affords a larger vocabulary.
    assert plan_training(corpus_stats(repeated_corpus(300, 5, 5))).vocab_size == 1000
    large = plan_training(corpus_stats(repeated_corpus(100_000, 10, 10)), budget_seconds=36000)
    assert (large.d_model, large.vocab_size) == (128, 4000)  # planning.RUNG_VOCAB_CAPS


@pytest.mark.parametrize(
    "task, layers, peak",
    [
        ("tsv", (2, 64, 4, 256), 2e-3),  # the 2 x 64 rung of a run sized from its corpus
        ("spa_eng", (2, 64, 4, 256), 2e-3),
        ("tsv", (3, 128, 4, 512), 1.4e-3),  # the 3 x 128 rung, measured with
        ("tsv", (4, 256, 4, 1024), 4.95e-4),  # a rung without a measured peak: the rule
        ("tsv", (2, 64, 4, 128), 9.9e-4),  # not a rung's layers: the rule
        ("numbers", (2, 64, 4, 256), 9.9e-4),  # another task keeps the rule it was measured at
    ],
)
def test_a_measured_peak_applies_only_to_its_rung_on_data_sized_runs(task, layers, peak):
    names = ("num_layers", "d_model", "num_heads", "dff")
    sizes = dict(zip(names, layers, strict=True))
    assert _schedule(task, **sizes).peak_learning_rate == peak


@pytest.mark.parametrize(
    "given, dropout",
    [
        ({}, 0.0),  # sized from the corpus: the 2 x 64 rung, few passes: its measured dropout
        ({"time_budget": 600.0}, 0.1),  # 400 pairs for ten minutes: many passes
        ({"time_budget": None, "epochs": 3}, 0.0),  # without a budget: the epochs given
        ({"time_budget": None, "epochs": 20}, 0.1),
        ({"num_layers": 3, "d_model": 128, "num_heads": 4, "dff": 512}, 0.1),  # none measured
        ({"d_model": 64, "dff": 128}, 0.1),  # not a rung's layers
        ({"dropout": 0.3}, 0.3),  # given: kept
        ({"dropout": 0.1}, 0.1),
    ],
)
def test_dropout_is_the_rungs_measured_value_for_few_passes_unless_given(given, dropout):
    from keras_transformer.data.tasks.task import Task
    from keras_transformer.training.config import TrainConfig

    pairs = [(f"a b c {i}", f"x y z {i}") for i in range(400)]
    task = Task("tsv", "en", "xx", train=pairs, validation=pairs[:10], test=pairs[:10])
    config = TrainConfig(task="tsv", data="p.tsv", **{"time_budget": 1.0, **given})
    sizes, sized = plan_module.resolve_sizes(config, task, None, "translation")
    assert sizes["dropout"] == dropout
    assert ("dropout" in sized) == ("dropout" not in given)
    assert config.dropout == given.get("dropout")  # the caller's config is only read


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
    assert choose_vocab_size(corpus_stats(repeated_corpus(10))) == 1000  # tiny: the floor
    # 700k words on both sides: 8000 pieces; four times the words: twice the pieces.
    assert choose_vocab_size(corpus_stats(repeated_corpus(35_000, 10, 10))) == 8000
    assert choose_vocab_size(corpus_stats(repeated_corpus(140_000, 10, 10))) == 16000
    assert (
        choose_vocab_size(corpus_stats(repeated_corpus(2_000_000, 10, 10))) == 32000
    )  # the ceiling
    # A 6k-pair corpus of TED sentences (about 220k words): 4500.
    assert choose_vocab_size(corpus_stats(repeated_corpus(6000, 18, 19))) == 4500


def test_max_length_covers_the_longest_side_in_pieces():
    assert choose_max_length(corpus_stats(repeated_corpus(100, 4, 6))) == 16  # floor
    # 40 words -> 60 pieces + 2 = 62 -> 64
    assert choose_max_length(corpus_stats(repeated_corpus(100, 40, 20))) == 64
    assert choose_max_length(corpus_stats(repeated_corpus(100, 10, 400))) == 256  # ceiling


def test_functions_reject_something_else_than_stats():
    with pytest.raises(TypeError, match="CorpusStats"):
        choose_vocab_size({"num_pairs": 3})
    with pytest.raises(TypeError, match="CorpusStats"):
        choose_max_length((1, 2, 3))


def test_stats_of_a_two_pair_corpus_field_by_field():
    stats = corpus_stats([("a b", "c"), ("a b c d", "e f")])
    assert stats == CorpusStats(
        num_pairs=2,
        source_words=6,
        target_words=3,
        source_chars=3 + 7,
        target_chars=1 + 3,
        source_types=4,
        target_types=3,
        mean_source_words=3.0,
        mean_target_words=1.5,
        p99_source_words=4,
        p99_target_words=2,
    )
    assert target_tokens(stats) == 3 * 1.5 + 2  # 1.5 pieces a word, one [END] a pair
