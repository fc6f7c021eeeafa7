"""Generated film reviews: an unlabelled corpus for masked-LM pre-training and a
small labelled sentiment set whose test words never occur in its training labels.

The point of the task is the one BERT made: words the labelled set never shows
still get useful representations from *unlabelled* text, because masked
language modelling makes words that appear in the same contexts look alike.

- `reviews_corpus`: unlabelled sentences in which every sentiment adjective
  appears next to phrases of its polarity ("the plot was gripping and i
  would watch it again", "the plot was tedious and i walked out early").
- `reviews_task`: labelled `(sentence, "positive" | "negative")` pairs in
  neutral frames ("the plot was gripping"), so only the adjective decides the
  label. Half of each polarity's adjectives (`seen`, chosen by `seed`) appear
  in the training and validation pairs; the test pairs use only the other half
  (`unseen`). A classifier trained from scratch has never been told anything
  about the unseen adjectives and scores near chance on the test split; one
  fine-tuned from an encoder pre-trained on `reviews_corpus` can place them
  next to the seen adjectives of their polarity.

Both are generated offline and are deterministic for a seed.
"""

from __future__ import annotations

import itertools

import numpy as np

from keras_transformer._validation import check_int, check_positive_int, check_seed
from keras_transformer.data.tasks.task import Task
from keras_transformer.errors import UserInputError

POSITIVE: tuple[str, ...] = (
    "great",
    "wonderful",
    "superb",
    "brilliant",
    "delightful",
    "charming",
    "excellent",
    "gripping",
    "stunning",
    "clever",
    "beautiful",
    "fantastic",
    "touching",
    "witty",
    "splendid",
    "marvellous",
)
"""Adjectives of positive reviews."""

NEGATIVE: tuple[str, ...] = (
    "awful",
    "dreadful",
    "boring",
    "dull",
    "terrible",
    "clumsy",
    "tedious",
    "bland",
    "messy",
    "lifeless",
    "poor",
    "weak",
    "silly",
    "painful",
    "shallow",
    "forgettable",
)
"""Adjectives of negative reviews."""

SUBJECTS: tuple[str, ...] = (
    "film",
    "movie",
    "story",
    "plot",
    "acting",
    "script",
    "ending",
    "cast",
    "music",
    "dialogue",
    "direction",
    "pacing",
    "finale",
    "sequel",
    "soundtrack",
    "screenplay",
)
"""What a review talks about."""

POSITIVE_CONTEXT: tuple[str, ...] = (
    "i loved every minute",
    "i would watch it again",
    "the audience cheered",
    "we left smiling",
    "it is a must see",
    "i recommend it to everyone",
    "i will buy the dvd",
    "my friends adored it",
)
"""Phrases that occur beside positive adjectives in the unlabelled corpus."""

NEGATIVE_CONTEXT: tuple[str, ...] = (
    "i hated every minute",
    "i walked out early",
    "the audience groaned",
    "we left annoyed",
    "it is a waste of money",
    "i warn everyone to avoid it",
    "i want my ticket back",
    "my friends fell asleep",
)
"""Phrases that occur beside negative adjectives in the unlabelled corpus."""

CORPUS_FRAMES: tuple[str, ...] = (
    "the {subject} was {adjective} and {context}",
    "{context} because the {subject} was so {adjective}",
    "the {adjective} {subject} : {context}",
    "{context} : the {subject} is {adjective}",
    "the {subject} was {adjective} and {other} , {context}",
    "a {adjective} , {other} {subject}",
)
"""Frames of the unlabelled sentences (`other`: a second adjective of the same polarity)."""

LABELLED_FRAMES: tuple[str, ...] = (
    "the {subject} was {adjective}",
    "the {subject} is {adjective}",
    "the {subject} seemed {adjective}",
    "the {subject} felt {adjective}",
    "i found the {subject} {adjective}",
)
"""Neutral frames of the labelled sentences: only the adjective carries the label."""

LABELS: tuple[str, ...] = ("negative", "positive")
"""Class names in label order."""


def split_adjectives(seed: int = 0) -> dict[str, tuple[str, ...]]:
    """The adjectives of the labelled training split (`"seen"`) and of its test split (`"unseen"`).

    Half of each polarity's adjectives, chosen by `seed`, are seen.

    Example:

    >>> words = split_adjectives(seed=0)
    >>> len(words["seen"]), len(words["unseen"]), set(words["seen"]) & set(words["unseen"])
    (16, 16, set())
    """
    check_seed(seed)
    rng = np.random.default_rng(seed)
    seen: list[str] = []
    unseen: list[str] = []
    for words in (POSITIVE, NEGATIVE):
        order = rng.permutation(len(words))
        half = len(words) // 2
        seen += [words[i] for i in sorted(order[:half])]
        unseen += [words[i] for i in sorted(order[half:])]
    return {"seen": tuple(seen), "unseen": tuple(unseen)}


def polarity(adjective: str) -> str:
    """`"positive"` or `"negative"` for one of the task's adjectives.

    Example:

    >>> polarity("gripping"), polarity("tedious")
    ('positive', 'negative')
    """
    if adjective in POSITIVE:
        return "positive"
    if adjective in NEGATIVE:
        return "negative"
    raise UserInputError(f"adjective={adjective!r} is not one of the task's sentiment adjectives")


def reviews_corpus(num_sentences: int = 20_000, seed: int = 0) -> list[str]:
    """Unlabelled review sentences for masked-LM pre-training.

    Every adjective (seen and unseen alike) occurs, each time beside a phrase
    of its own polarity or another adjective of its polarity ("witty and
    charming"); no sentence states a label.

    Args:
        num_sentences: how many sentences to draw (with repetition of frames).
        seed: random seed.

    Returns:
        A list of `num_sentences` strings.

    Example:

    >>> reviews_corpus(2, seed=3)
    ['the finale was brilliant and i will buy the dvd', 'the dialogue was charming and we left smiling']
    """
    check_positive_int("num_sentences", num_sentences)
    rng = np.random.default_rng(check_seed(seed))
    sentences = []
    for _ in range(num_sentences):
        positive = bool(rng.integers(2))
        adjectives, contexts = (
            (POSITIVE, POSITIVE_CONTEXT) if positive else (NEGATIVE, NEGATIVE_CONTEXT)
        )
        frame = CORPUS_FRAMES[rng.integers(len(CORPUS_FRAMES))]
        first, second = rng.choice(len(adjectives), size=2, replace=False)
        sentences.append(
            frame.format(
                subject=SUBJECTS[rng.integers(len(SUBJECTS))],
                adjective=adjectives[first],
                other=adjectives[second],
                context=contexts[rng.integers(len(contexts))],
            )
        )
    return sentences


def reviews_task(
    num_train: int = 128,
    num_validation: int = 64,
    num_test: int = 512,
    seed: int = 0,
) -> Task:
    """A small labelled sentiment set; its test adjectives never occur in training.

    Args:
        num_train: labelled training sentences (seen adjectives), at most the
            number of distinct (frame, subject, adjective) combinations (1280).
        num_validation: validation sentences (seen adjectives, disjoint from training).
        num_test: test sentences (unseen adjectives only), at most 1280.
        seed: random seed; it also chooses which adjectives are seen.

    Returns:
        A `Task` named `"reviews"` of `(sentence, "positive" | "negative")`
        pairs; `info["adjectives"]` holds the seen and unseen adjectives.

    Example:

    >>> task = reviews_task(num_train=4, num_validation=2, num_test=3, seed=0)
    >>> task
    Task(name='reviews', en->sentiment, train=4, validation=2, test=3)
    >>> task.test[0]
    ('the sequel is excellent', 'positive')
    """
    for name, value in (("num_train", num_train), ("num_test", num_test)):
        check_positive_int(name, value)
    check_int("num_validation", num_validation, minimum=0)
    words = split_adjectives(seed)
    rng = np.random.default_rng(check_seed(seed) + 1)

    def sentences(adjectives):
        combos = list(itertools.product(LABELLED_FRAMES, SUBJECTS, adjectives))
        order = rng.permutation(len(combos))
        return [
            (frame.format(subject=subject, adjective=adjective), polarity(adjective))
            for frame, subject, adjective in (combos[i] for i in order)
        ]

    seen, unseen = sentences(words["seen"]), sentences(words["unseen"])
    if num_train + num_validation > len(seen):
        raise UserInputError(
            f"num_train + num_validation = {num_train + num_validation} exceeds the "
            f"{len(seen)} distinct labelled sentences of the seen adjectives; lower them."
        )
    if num_test > len(unseen):
        raise UserInputError(
            f"num_test={num_test} exceeds the {len(unseen)} distinct sentences of the "
            "unseen adjectives; lower it."
        )
    return Task(
        name="reviews",
        source_lang="en",
        target_lang="sentiment",
        train=seen[:num_train],
        validation=seen[num_train : num_train + num_validation],
        test=unseen[:num_test],
        info={"class_names": LABELS, "adjectives": words},
    )
