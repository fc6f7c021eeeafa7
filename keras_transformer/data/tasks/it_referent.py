"""The course's "it" example as a generated task: what does "it" refer to?

"The animal didn't cross the street because it was too tired" -> "it" is the
animal; "... because it was too wide" -> "it" is the street. Every sentence of
`it_referent_task` follows that pattern with words from the lists below, and
only the adjective *after* "it" decides the referent: subjects are animate,
objects are places, and every subject and object occurs with adjectives of
both kinds. So a model that reads the whole sentence (an encoder, no causal
mask) can answer at the position of "it", and a causal decoder, which at that
position has seen only "The animal didn't cross the street because it", can do
no better than chance.

Pairs are `(sentence, referent noun)`; `referent_labels` turns them into the
class (0: the subject, 1: the object) and `it_word_index` finds "it". The test
split holds (subject, object, adjective) combinations that never occur in
training or validation.
"""

import itertools

import numpy as np

from keras_transformer._validation import check_int, check_seed
from keras_transformer.data.tasks.task import Task
from keras_transformer.errors import UserInputError

SUBJECTS: tuple[str, ...] = (
    "animal",
    "dog",
    "cat",
    "horse",
    "cow",
    "fox",
    "rabbit",
    "goat",
    "sheep",
    "bear",
    "child",
    "boy",
    "girl",
    "man",
    "woman",
    "farmer",
    "soldier",
    "hiker",
    "tourist",
    "runner",
)
"""Animate subjects: "it" refers to them when the adjective describes a living being."""

VERB_OBJECTS: dict[str, tuple[str, ...]] = {
    "cross": ("street", "road", "river", "bridge", "field", "valley"),
    "climb": ("hill", "wall", "tree", "fence", "tower", "mountain"),
    "enter": ("cave", "tunnel", "forest", "building", "yard", "garden"),
    "swim across": ("lake", "pond", "channel", "canal", "bay", "stream"),
}
"""Verbs and the places each can take as its object."""

SUBJECT_ADJECTIVES: tuple[str, ...] = (
    "tired",
    "hungry",
    "scared",
    "sleepy",
    "weak",
    "lazy",
    "sick",
    "nervous",
    "exhausted",
    "frightened",
)
"""Adjectives that describe the subject: "it was too tired" -> the animal."""

OBJECT_ADJECTIVES: tuple[str, ...] = (
    "wide",
    "deep",
    "long",
    "steep",
    "dangerous",
    "crowded",
    "icy",
    "muddy",
    "high",
    "dark",
)
"""Adjectives that describe the object: "it was too wide" -> the street."""

CONNECTIVES: tuple[str, ...] = ("because", "since", "as")
INTENSIFIERS: tuple[str, ...] = ("too", "so", "very")

SUBJECT, OBJECT = 0, 1
CLASS_NAMES: tuple[str, ...] = ("subject", "object")


def _combinations() -> list[tuple[str, str, str, str]]:
    """Every (subject, verb, object, adjective), in a fixed order."""
    pairs = [(verb, obj) for verb, objects in VERB_OBJECTS.items() for obj in objects]
    return [
        (subject, verb, obj, adjective)
        for subject, (verb, obj), adjective in itertools.product(
            SUBJECTS, pairs, SUBJECT_ADJECTIVES + OBJECT_ADJECTIVES
        )
    ]


def _sentence(subject, verb, obj, adjective, rng: np.random.Generator) -> tuple[str, str]:
    connective = CONNECTIVES[rng.integers(len(CONNECTIVES))]
    intensifier = INTENSIFIERS[rng.integers(len(INTENSIFIERS))]
    sentence = (
        f"The {subject} didn't {verb} the {obj} {connective} it was {intensifier} {adjective} ."
    )
    referent = subject if adjective in SUBJECT_ADJECTIVES else obj
    return sentence, referent


def it_referent_task(
    num_train: int = 8000,
    num_validation: int = 500,
    num_test: int = 1000,
    seed: int = 0,
) -> Task:
    """Sentences in the pattern of the course's "it" example, with the referent of "it".

    The (subject, object, adjective) combinations are split into disjoint sets
    before any sentence is made, so a test sentence's combination of words was
    never seen in training (each word on its own was). Half of the adjectives
    point at the subject and half at the object, so the classes are balanced
    and a model that cannot see the adjective is at chance (0.5).

    Args:
        num_train: training sentences (drawn, with random connective and
            intensifier, from the training combinations; repeats allowed).
        num_validation: validation sentences, one per held-out combination.
        num_test: test sentences, one per held-out combination.
        seed: seed of the split and of the sentence generator.

    Returns:
        A `Task` named `"it-referent"` whose pairs are `(sentence, referent noun)`;
        `info["combinations"][split]` holds each split's (subject, object, adjective).

    Example:

    >>> task = it_referent_task(num_train=4, num_validation=2, num_test=2, seed=0)
    >>> task
    Task(name='it-referent', en->referent, train=4, validation=2, test=2)
    >>> sentence, referent = task.test[0]
    >>> "it" in sentence.split() and referent in sentence.split()
    True
    """
    check_int("num_train", num_train, minimum=0)
    check_int("num_validation", num_validation, minimum=0)
    check_int("num_test", num_test, minimum=0)
    check_seed(seed)
    combos = _combinations()
    held_out = num_validation + num_test
    if held_out > len(combos) // 2:
        raise UserInputError(
            f"num_validation + num_test = {held_out} leaves too few of the {len(combos)} "
            f"word combinations for training; keep it <= {len(combos) // 2}."
        )
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(combos))
    test_combos = [combos[i] for i in order[:num_test]]
    validation_combos = [combos[i] for i in order[num_test:held_out]]
    train_pool = [combos[i] for i in order[held_out:]]
    train_combos = [train_pool[i] for i in rng.integers(len(train_pool), size=num_train)]

    def make(split_combos):
        return [_sentence(*combo, rng) for combo in split_combos]

    def key(combo):  # (subject, object, adjective): the verb follows from the object
        return combo[0], combo[2], combo[3]

    return Task(
        name="it-referent",
        source_lang="en",
        target_lang="referent",
        train=make(train_combos),
        validation=make(validation_combos),
        test=make(test_combos),
        info={
            "options": {
                "num_train": num_train,
                "num_validation": num_validation,
                "num_test": num_test,
                "seed": seed,
            },
            "class_names": CLASS_NAMES,
            "combinations": {
                "train": sorted({key(c) for c in train_pool}),
                "validation": [key(c) for c in validation_combos],
                "test": [key(c) for c in test_combos],
            },
        },
    )


def it_word_index(sentence: str) -> int:
    """Index of the word "it" among the whitespace-separated words of `sentence`.

    Example:

    >>> it_word_index("The dog didn't cross the road because it was too wide .")
    7
    """
    words = sentence.split()
    if "it" not in words:
        raise ValueError(f"sentence={sentence!r} has no word 'it'; it-referent needs one.")
    return words.index("it")


def nouns(sentence: str) -> tuple[str, str]:
    """The (subject, object) of an `it-referent` sentence: the nouns "it" may refer to.

    Example:

    >>> nouns("The fox didn't swim across the lake since it was so deep .")
    ('fox', 'lake')
    """
    words = sentence.split()
    return words[1], words[it_word_index(sentence) - 2]


def referent_labels(pairs: list[tuple[str, str]]) -> np.ndarray:
    """Class of each pair: 0 (`SUBJECT`) if "it" is the first noun, 1 (`OBJECT`) if the second.

    Args:
        pairs: `(sentence, referent)` pairs from `it_referent_task`.

    Returns:
        int32 array `(len(pairs),)`.

    Example:

    >>> referent_labels([("The cat didn't climb the wall because it was too tired .", "cat"),
    ...                  ("The cat didn't climb the wall because it was too high .", "wall")])
    array([0, 1], dtype=int32)
    """
    labels = []
    for sentence, referent in pairs:
        candidates = nouns(sentence)
        if referent not in candidates:
            raise ValueError(
                f"referent={referent!r} is neither noun {candidates} of {sentence!r}; "
                "pairs must come from it_referent_task."
            )
        labels.append(candidates.index(referent))
    return np.asarray(labels, dtype="int32")
