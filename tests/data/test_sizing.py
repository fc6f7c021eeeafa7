"""Tests for keras_transformer.data.sizing: corpus statistics, vocabulary size and length."""

import pytest

from keras_transformer.training.planning import (
    CorpusStats,
    choose_max_length,
    choose_vocab_size,
    corpus_stats,
    target_tokens,
)
from tests.helpers import repeated_corpus


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
