"""IMDB movie reviews (Keras datasets): sentiment as `(review, "positive" | "negative")` pairs."""

from __future__ import annotations

import keras
import numpy as np

from keras_transformer._validation import check_int, check_positive_int, check_seed
from keras_transformer.data.tasks.task import Task
from keras_transformer.errors import UserInputError

LABELS: tuple[str, ...] = ("negative", "positive")
"""Class names in label order (Keras: 0 negative, 1 positive)."""

_INDEX_FROM = 3  # keras.datasets.imdb reserves 0 padding, 1 start, 2 out-of-vocabulary


def _decode(sequence, words: dict[int, str], max_words: int) -> str:
    tokens = [words.get(int(i), "<unk>") for i in sequence if int(i) != 1]
    return " ".join(tokens[:max_words])


def imdb_task(
    num_words: int = 20_000,
    max_words: int = 200,
    num_train: int | None = None,
    num_validation: int = 2_500,
    num_test: int | None = None,
    seed: int = 0,
) -> Task:
    """The 50,000 IMDB reviews of `keras.datasets.imdb`, decoded back to text.

    Downloads `imdb.npz` and `imdb_word_index.json` into `~/.keras/datasets`
    the first time. Words outside the `num_words` most frequent read `<unk>`;
    each review keeps its first `max_words` words. Validation pairs come from
    the (shuffled) training split; the test split is Keras's test split.

    Args:
        num_words: vocabulary of the word ids Keras returns.
        max_words: words kept per review.
        num_train: training reviews (all that remain after validation by default).
        num_validation: validation reviews taken from the training split.
        num_test: test reviews (all 25,000 by default).
        seed: shuffling seed.

    Returns:
        A `Task` named `"imdb"` with `(review, "positive" | "negative")` pairs.
    """
    check_positive_int("num_words", num_words)
    check_positive_int("max_words", max_words)
    check_int("num_validation", num_validation, minimum=0)
    check_seed(seed)
    try:
        (x_train, y_train), (x_test, y_test) = keras.datasets.imdb.load_data(
            num_words=num_words, index_from=_INDEX_FROM
        )
        index = keras.datasets.imdb.get_word_index()
    except Exception as error:  # Keras reports a failed download as a bare Exception
        if isinstance(error, (ValueError, TypeError)):
            raise
        raise OSError(
            "could not load the IMDB reviews of keras.datasets.imdb "
            f"({str(error).splitlines()[0] if str(error) else type(error).__name__}); connect "
            "to the internet once, or put imdb.npz and imdb_word_index.json in "
            "~/.keras/datasets (or $KERAS_HOME/datasets)."
        ) from error
    words = {i + _INDEX_FROM: word for word, i in index.items()}
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x_train))
    if num_validation >= len(order):
        raise UserInputError(
            f"num_validation={num_validation} leaves no training reviews out of {len(order)}; "
            "lower it."
        )

    def pairs(xs, ys, indices):
        return [(_decode(xs[i], words, max_words), LABELS[int(ys[i])]) for i in indices]

    validation = order[:num_validation]
    train = order[num_validation:]
    if num_train is not None:
        train = train[: check_int("num_train", num_train, minimum=0)]
    test = rng.permutation(len(x_test))
    if num_test is not None:
        test = test[: check_int("num_test", num_test, minimum=0)]
    return Task(
        name="imdb",
        source_lang="en",
        target_lang="sentiment",
        train=pairs(x_train, y_train, train),
        validation=pairs(x_train, y_train, validation),
        test=pairs(x_test, y_test, test),
        info={"class_names": LABELS, "options": {"num_words": num_words, "max_words": max_words}},
    )
