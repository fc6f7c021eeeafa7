"""A WordPiece tokenizer that keeps case and accents and runs in the TensorFlow graph.

Text is normalised (`normalize_text`), split into words on spaces, and WordPiece
(tensorflow-text) splits each word into pieces, marking later pieces with `##`:
"twenty-four" -> `twenty`, `##-`, `##four`. `detokenize(tokenize(s)) == normalize_text(s)`
for text whose characters were seen when the vocabulary was learned.

CJK ideographs are learned one piece each, as in multilingual BERT, so that no frequent
phrase (`##百二十三`) becomes a piece. Thai, Lao, Myanmar and Khmer words, written without
spaces, get byte-pair-merged pieces (`_merged_pieces`). Nothing is lower-cased or
accent-stripped: the package scores the detokenized strings a user reads. The
measurements behind these choices are in docs/performance.md ("Time to quality on the
numbers task").
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import re
import warnings
from collections.abc import Iterable, Sequence

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from keras_transformer._quiet import drop_per_instance_retracing
from keras_transformer._validation import check_positive_int
from keras_transformer.data.text.learner import ThresholdLearner
from keras_transformer.data.text.normalize import normalize_text_tensor
from keras_transformer.errors import UserInputError

RESERVED_TOKENS: tuple[str, ...] = ("[PAD]", "[UNK]", "[START]", "[END]", "[SEP]", "[MASK]")
"""Reserved tokens, in id order: `[PAD]`=0, `[UNK]`=1, `[START]`=2, `[END]`=3, `[SEP]`=4, `[MASK]`=5."""

SUFFIX_INDICATOR = "##"
VOCAB_FILENAME = "vocab.txt"
_LEARN_CHUNK = 10_000
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
"""CJK ideographs (BERT's `_is_chinese_char` blocks): learned one character per piece."""
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]")
"""Thai, Lao, Myanmar and Khmer letters: their words get pieces from `_merged_pieces`."""
_MIN_MERGE_COUNT = 100

drop_per_instance_retracing()  # each tokenizer traces its functions once per id layout


def _is_suffix(token: str) -> bool:
    return token.startswith(SUFFIX_INDICATOR) and len(token) > len(SUFFIX_INDICATOR)


def _merged_pieces(counts: dict[str, int], max_merges: int) -> set[str]:
    """The pieces of `counts`' words after byte-pair merges (later pieces with `##`).

    Merges the most frequent adjacent pair while it occurs >= `_MIN_MERGE_COUNT` times,
    at most `max_merges` times.
    """
    words, freqs = [list(word) for word in counts], list(counts.values())
    pairs, where = collections.Counter(), collections.defaultdict(set)
    for index, (word, freq) in enumerate(zip(words, freqs, strict=True)):
        for pair in itertools.pairwise(word):
            pairs[pair] += freq
            where[pair].add(index)
    for _ in range(max_merges):
        best = max(pairs.items(), key=lambda item: (item[1], item[0]), default=None)
        if best is None or best[1] < _MIN_MERGE_COUNT:
            break
        (a, b), merged = best[0], best[0][0] + best[0][1]
        for index in where.pop((a, b)):
            old, new, j = words[index], [], 0
            while j < len(old):
                pair_here = j + 1 < len(old) and old[j] == a and old[j + 1] == b
                new.append(merged if pair_here else old[j])
                j += 2 if pair_here else 1
            for pair in itertools.pairwise(old):
                pairs[pair] -= freqs[index]
                if not pairs[pair]:
                    del pairs[pair]
            for pair in itertools.pairwise(new):
                pairs[pair] += freqs[index]
                where[pair].add(index)
            words[index] = new
    return {word[0] for word in words} | {SUFFIX_INDICATOR + p for word in words for p in word[1:]}


def _validate_vocab(vocab: list[str]) -> None:
    if list(vocab[: len(RESERVED_TOKENS)]) != list(RESERVED_TOKENS):
        raise UserInputError(
            f"vocab must start with the reserved tokens {list(RESERVED_TOKENS)} in this order, "
            f"got {list(vocab[: len(RESERVED_TOKENS)])}; build it with WordPieceTokenizer.learn() "
            "or prepend the reserved tokens"
        )
    if len(vocab) == len(RESERVED_TOKENS):
        raise UserInputError(
            "vocab holds only the reserved tokens; it needs at least one text piece"
        )
    seen: set[str] = set()
    for index, token in enumerate(vocab):
        if not isinstance(token, str) or not token:
            raise UserInputError(f"vocab[{index}]={token!r} must be a non-empty string")
        if len(token.split()) != 1 or token.strip() != token:
            raise UserInputError(
                f"vocab[{index}]={token!r} contains whitespace; pieces are parts of "
                "whitespace-separated words, so remove it"
            )
        if token in seen:
            raise UserInputError(
                f"vocab[{index}]={token!r} is a duplicate; every token must be unique"
            )
        seen.add(token)


_KEY_SUFFIX = " "
"""How WordPiece's table keys continuation pieces: `"##s"` is looked up as `" s"`.

A word's first piece is looked up as it is spelled, so keying continuations by their
`##` spelling read the word `"##s"` as the continuation `s` and glued it to the word
before it. No word holds a space (`_split_words`), so a space keeps the two apart."""


def _lookup_keys(vocab: Sequence[str]) -> list[str]:
    """The WordPiece table's key for each token, in id order.

    Continuation pieces: `_KEY_SUFFIX` + piece. Reserved tokens other than `[UNK]`: two
    spaces + token, which neither a word (no space) nor a continuation (one space, then
    a piece without one) can look up, so the text "[PAD]" never maps to id 0.
    """
    keys = []
    for i, token in enumerate(vocab):
        if i < len(RESERVED_TOKENS) and token != "[UNK]":
            keys.append(2 * _KEY_SUFFIX + token)
        elif _is_suffix(token):
            keys.append(_KEY_SUFFIX + token[len(SUFFIX_INDICATOR) :])
        else:
            keys.append(token)
    return keys


def _split_words(strings: tf.Tensor) -> tf.RaggedTensor:
    """Normalise, then split on the single spaces left (as `learn` and `tokenize` do)."""
    words = tf.strings.split(normalize_text_tensor(strings), sep=" ")  # (batch, words)
    return tf.ragged.boolean_mask(words, tf.strings.length(words) > 0)  # "" has no word


def count_words(texts: Iterable[str]) -> collections.Counter:
    """Counts the whitespace-separated words of `texts`, exactly as `tokenize` splits them.

    Args:
        texts: an iterable of strings.

    Returns:
        A `collections.Counter` mapping each word (str) to its count.

    Example:
    >>> count_words(["fünf und fünf", "  zehn\xa0elf "])
    Counter({'fünf': 2, 'und': 1, 'zehn': 1, 'elf': 1})
    """
    texts = list(texts)
    counts: collections.Counter = collections.Counter()
    for start in range(0, len(texts), _LEARN_CHUNK):
        chunk = tf.constant(texts[start : start + _LEARN_CHUNK], dtype=tf.string)
        counts.update(_split_words(chunk).flat_values.numpy().tolist())
    return collections.Counter({word.decode("utf-8"): n for word, n in counts.items()})


def _learn_pieces(word_counts: list[tuple[str, int]], vocab_size: int, **options) -> list[str]:
    """tensorflow-text's WordPiece learner (`learner.learn`), with a faster threshold search.

    The learner keeps the pieces seen at least `thresh` times and searches for the `thresh`
    whose vocabulary is 0-5 % below `vocab_size`. Its search halves the count range, one
    learning pass each (12 passes, 46 s of the 68 s setup of a 95k-pair Anki run); the
    vocabulary's size falls about as a power of the threshold, so `_find_threshold` guesses
    the next threshold on a log-log line through the two nearest sizes, inside the bracket
    found so far: 4 to 6 passes reach the same 5 % window. It starts where the learner's first
    iteration predicts the size (`ThresholdLearner.guess`), and each pass counts that first
    iteration once for all thresholds (`ThresholdLearner`)."""
    params = learner.Params(
        upper_thresh=int(1e7),
        lower_thresh=options["lower_thresh"],
        num_iterations=options["num_iterations"],
        max_input_tokens=int(5e6),
        max_token_length=options["max_token_length"],
        max_unique_chars=options["max_unique_chars"],
        vocab_size=vocab_size,
        slack_ratio=0.05,
        include_joiner_token=True,
        joiner=SUFFIX_INDICATOR,
        reserved_tokens=list(RESERVED_TOKENS),
    )
    upper, lower = learner.get_search_threshs(word_counts, params.upper_thresh, params.lower_thresh)
    counts = learner.get_input_words(word_counts, params.reserved_tokens, params.max_token_length)
    allowed = learner.get_allowed_chars(counts, params.max_unique_chars)
    counts = learner.filter_input_words(counts, allowed, params.max_input_tokens)
    learn = ThresholdLearner(counts, params)
    return _find_threshold(learn, lower, upper, vocab_size, params.slack_ratio, guess=learn.guess)


def _find_threshold(learn, lower: int, upper: int, vocab_size: int, slack_ratio: float, guess=None):
    """The vocabulary `learn(thresh)` for an integer `thresh` in [lower, upper] whose size is
    within `slack_ratio` below `vocab_size` (sizes fall as `thresh` rises); when none is, the
    largest one not above `vocab_size`, else the smallest one learnt.

    Each threshold tried is `guess(size, learnt)` where given (`ThresholdLearner.guess`: from
    the learner's first iteration), while it falls inside the bracket found so far and was not
    tried; else the middle of the range in logs first, then `_next_threshold`'s line.

    >>> tried = []
    >>> def learn(thresh):  # a vocabulary of 100000 / thresh pieces
    ...     tried.append(thresh)
    ...     return ["x"] * (100_000 // thresh)
    >>> len(_find_threshold(learn, 1, 100_000, 3500, 0.05)), tried
    (3333, [316, 26, 39, 30])

    An empty range (a small corpus: tensorflow-text's upper bound below its lower one) is one
    try at the midpoint, as tensorflow-text's own search does:

    >>> tried.clear()
    >>> len(_find_threshold(learn, 10, 1, 2000, 0.05)), tried
    (20000, [5])
    """
    if lower >= upper:
        return learn((lower + upper) // 2)
    low_slack = vocab_size - slack_ratio * vocab_size
    learnt = {}  # thresh -> size
    best_vocab, best_size, smallest = None, -1, None
    lo, hi = lower, upper  # the answer's thresh is in [lo, hi]
    target = (low_slack + vocab_size) / 2

    def next_thresh(lo, hi):  # the next threshold to try, in [lo, hi]
        if guess is not None:
            thresh = int(guess(target, learnt))
            if lo <= thresh <= hi and thresh not in learnt:
                return thresh
        if not learnt:
            return int(round(math.sqrt(max(lo, 1) * max(hi, 1))))
        return _next_threshold(learnt, lo, hi, target)

    thresh = next_thresh(lo, hi)
    while True:
        vocab = learn(thresh)
        size = learnt[thresh] = len(vocab)
        if size <= vocab_size and size > best_size:
            best_vocab, best_size = vocab, size
        if smallest is None or size < len(smallest):
            smallest = vocab
        if low_slack <= size <= vocab_size:
            return vocab
        if size > vocab_size:
            lo = thresh + 1  # too many pieces: a higher threshold
        else:
            hi = thresh - 1
        if lo > hi or thresh <= 1:
            return best_vocab if best_vocab is not None else smallest
        thresh = next_thresh(lo, hi)


def _next_threshold(learnt: dict[int, int], lo: int, hi: int, target: float) -> int:
    """A threshold in [lo, hi] on the log-log line through the learnt sizes nearest `target`
    on each side (one side only: through its last two, else a slope of -1), pulled a quarter
    of the way to the middle of the bracket (in logs) so that a bad line still shrinks it."""
    above = sorted((t, s) for t, s in learnt.items() if s > target)  # thresholds too low
    below = sorted((t, s) for t, s in learnt.items() if s <= target)
    if above and below:
        (t1, s1), (t2, s2) = above[-1], below[0]
    elif len(above) >= 2 or len(below) >= 2:
        (t1, s1), (t2, s2) = (above if above else below)[-2:] if above else below[:2]
    else:
        (t1, s1), (t2, s2) = (above or below)[0], (None, None)
    slope = -1.0
    if t2 is not None and t2 != t1:
        slope = (math.log(max(s2, 1)) - math.log(max(s1, 1))) / (math.log(t2) - math.log(t1))
    slope = min(max(slope, -3.0), -0.05)
    guess = math.log(t1) + (math.log(target) - math.log(max(s1, 1))) / slope
    middle = (math.log(max(lo, 1)) + math.log(max(hi, 1))) / 2
    thresh = int(round(math.exp(0.75 * guess + 0.25 * middle)))
    return min(max(thresh, lo), hi)


class WordPieceTokenizer(tf.Module):
    """WordPiece tokenizer (tensorflow-text) that keeps case and accents.

    `tokenize`, `detokenize` and `lookup` are TensorFlow-only `tf.function`s, so it runs
    in `tf.data` and in a SavedModel. A word with an unseen character, or longer than
    `max_bytes_per_word` bytes, becomes one `[UNK]`. A word's first piece is never a
    continuation piece, even for a word spelled with `##` ("##0" -> `#`, `###`, `##0`).
    Ids 0..5 are `RESERVED_TOKENS` (`pad_id` ... `mask_id`): `tokenize` emits only
    `[UNK]` of them (a literal "[START]" is spelled in pieces), `detokenize` drops all
    but `[UNK]`.

    Args:
        vocab: the tokens, in id order; must start with `RESERVED_TOKENS`.
            Continuation pieces start with `##`. Usually from `learn()` or `load()`.
        max_bytes_per_word: words longer than this many UTF-8 bytes become `[UNK]`.
        name: optional `tf.Module` name.

    Example:
    >>> tokenizer = WordPieceTokenizer.learn(["fünf und zwanzig", "dieciséis"], vocab_size=60)
    >>> ids = tokenizer.tokenize(["zwanzig fünf", "dieciséis"])
    >>> [tokenizer.start_id, tokenizer.end_id]
    [2, 3]
    >>> [s.decode("utf-8") for s in tokenizer.detokenize(ids).numpy()]
    ['zwanzig fünf', 'dieciséis']
    """

    pad_id, unk_id, start_id, end_id, sep_id, mask_id = range(len(RESERVED_TOKENS))

    def __init__(
        self, vocab: Sequence[str], *, max_bytes_per_word: int = 200, name: str | None = None
    ) -> None:
        super().__init__(name=name)
        vocab = list(vocab)
        _validate_vocab(vocab)
        check_positive_int("max_bytes_per_word", max_bytes_per_word)
        self._vocabulary = tuple(vocab)
        self.max_bytes_per_word = max_bytes_per_word

        pieces = [t[len(SUFFIX_INDICATOR) :] if _is_suffix(t) else t for t in vocab]
        ids = tf.range(len(vocab), dtype=tf.int64)
        keys = tf.constant(_lookup_keys(vocab), dtype=tf.string)
        initializer = tf.lookup.KeyValueTensorInitializer(keys, ids)
        self._table = tf.lookup.StaticHashTable(initializer, default_value=self.unk_id)
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._table,
            suffix_indicator=_KEY_SUFFIX,
            max_bytes_per_word=max_bytes_per_word,
            max_chars_per_token=max(map(len, pieces)),
            token_out_type=tf.int64,
            unknown_token=RESERVED_TOKENS[self.unk_id],
        )
        self._tokens = tf.constant(vocab, dtype=tf.string)
        self._piece_text = tf.constant(pieces, dtype=tf.string)
        self._piece_is_suffix = tf.constant([_is_suffix(t) for t in vocab], dtype=tf.bool)

    def _trackable_children(self, save_type="checkpoint", **kwargs):
        """What `tf.saved_model.save` keeps: the id-consuming functions traced first for the
        usual inputs (dense int64/int32 and ragged ids), so that a SavedModel of this
        tokenizer, alone or inside a module, runs `detokenize` and `lookup` on them. Traced
        here, at save time, not in `__init__`: 0.4-0.6 s per tokenizer that is never
        saved (every run, translation and export loads two)."""
        if save_type == "savedmodel":
            dense = [tf.TensorSpec([None, None], dtype) for dtype in (tf.int64, tf.int32)]
            for spec in [*dense, tf.RaggedTensorSpec([None, None], tf.int64, ragged_rank=1)]:
                self.detokenize.get_concrete_function(spec)
                self.lookup.get_concrete_function(spec)
        return super()._trackable_children(save_type, **kwargs)

    @classmethod
    def learn(
        cls,
        texts: Iterable[str],
        vocab_size: int = 8000,
        *,
        lower_thresh: int = 10,
        max_word_length: int = 32,
        num_iterations: int = 4,
        max_bytes_per_word: int = 200,
        fill: bool = False,
    ) -> WordPieceTokenizer:
        """Learns a WordPiece vocabulary from training text.

        tensorflow-text's learner (behind `bert_vocab_from_dataset`) picks pieces from the
        words `tokenize` splits; every seen character is added as a piece and a `##` piece,
        so seen text never gives `[UNK]`. `vocab_size` is a target: the learner stops 5%
        below it or when no frequent pieces remain; added characters may exceed it.

        Args:
            texts: training sentences (str).
            vocab_size: target vocabulary size, reserved tokens included.
            lower_thresh: smallest piece count the learner's threshold search tries.
            max_word_length: longer words are left out of learning (not of tokenizing):
                the learner's cost grows with the cube of word length.
            num_iterations: refinement iterations of the learner.
            max_bytes_per_word: see the class docstring.
            fill: when the learner stops more than 5% short of `vocab_size` (a small
                corpus has few pieces seen `lower_thresh` times), learn again keeping
                pieces seen once: the vocabulary then holds every piece the corpus
                offers, up to `vocab_size` (compare `vocab_size` to see if it fell short).

        Returns:
            A `WordPieceTokenizer`.
        """
        if fill:
            options = dict(
                max_word_length=max_word_length,
                num_iterations=num_iterations,
                max_bytes_per_word=max_bytes_per_word,
            )
            texts = list(texts)
            first = cls.learn(texts, vocab_size, lower_thresh=lower_thresh, **options)
            if first.vocab_size >= 0.95 * vocab_size or lower_thresh == 1:
                return first
            second = cls.learn(texts, vocab_size, lower_thresh=1, **options)
            return second if second.vocab_size > first.vocab_size else first
        texts = list(texts)
        check_positive_int("vocab_size", vocab_size)
        if vocab_size <= len(RESERVED_TOKENS):
            raise UserInputError(
                f"vocab_size={vocab_size} must be larger than the {len(RESERVED_TOKENS)} "
                "reserved tokens, e.g. 8000"
            )
        check_positive_int("lower_thresh", lower_thresh)
        check_positive_int("max_word_length", max_word_length)
        check_positive_int("num_iterations", num_iterations)
        check_positive_int("max_bytes_per_word", max_bytes_per_word)
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    f"texts[{index}]={text!r} is a {type(text).__name__}; pass a list of str"
                )
        counts = count_words(texts)
        if not counts:
            raise UserInputError(
                f"texts (got {len(texts)} strings) contain no words; pass non-empty training text"
            )
        if long := [w for w in counts if len(w.encode("utf-8")) > max_bytes_per_word]:
            warnings.warn(
                f"{sum(counts[w] for w in long)} words of the training text are longer than "
                f"max_bytes_per_word={max_bytes_per_word} UTF-8 bytes and tokenize to [UNK] (e.g. "
                f"{long[0][:24]!r}..., {len(long[0].encode('utf-8'))} bytes); put spaces "
                "between words or raise max_bytes_per_word",
                UserWarning,
                stacklevel=2,
            )
        chars = sorted({char for word in counts for char in word})
        unspaced = {word: count for word, count in counts.items() if _UNSPACED.search(word)}
        spaced = [(word, count) for word, count in counts.items() if word not in unspaced]
        vocab = list(RESERVED_TOKENS)
        if spaced:
            vocab = _learn_pieces(
                spaced,
                vocab_size,
                lower_thresh=lower_thresh,
                num_iterations=num_iterations,
                max_token_length=max_word_length,
                max_unique_chars=len(chars),
            )
        vocab += sorted(_merged_pieces(unspaced, vocab_size) - set(vocab)) if unspaced else []
        vocab = [
            t for t in vocab if len(t.removeprefix(SUFFIX_INDICATOR)) == 1 or not _CJK.search(t)
        ]
        present = set(vocab)
        vocab += [t for c in chars for t in (c, SUFFIX_INDICATOR + c) if t not in present]
        return cls(vocab, max_bytes_per_word=max_bytes_per_word)

    @property
    def vocab_size(self) -> int:
        """Number of tokens, reserved ones included (ids are `0 .. vocab_size - 1`)."""
        return len(self._vocabulary)

    @property
    def vocabulary(self) -> tuple[str, ...]:
        """The tokens in id order (continuation pieces start with `##`)."""
        return self._vocabulary

    @property
    def reserved_tokens(self) -> tuple[str, ...]:
        """`RESERVED_TOKENS`: the tokens with ids 0..5."""
        return RESERVED_TOKENS

    def token_to_id(self, token: str) -> int:
        """The id of one vocabulary token (e.g. `"##s"`); KeyError if absent."""
        try:
            return self._vocabulary.index(token)
        except ValueError:
            raise KeyError(f"token={token!r} is not in the vocabulary") from None

    # autograph=False: autograph's conversion of tf.Module methods sometimes bound `self`
    # to TensorFlow's `TfMethodTarget` ("... has no attribute '_clean_ids'").
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """Strings to piece ids, without `[START]`/`[END]`.

        Args:
            strings: `(batch,)` tf.string (or a list of str).

        Returns:
            `tf.RaggedTensor` int64 of shape `(batch, None)`.
        """
        pieces = self._wordpiece.tokenize(_split_words(strings))  # (batch, words, pieces)
        return pieces.merge_dims(-2, -1)  # (batch, pieces)

    def _clean_ids(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.RaggedTensor:
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        ids = tf.cast(ids, tf.int64)
        flat = ids.flat_values
        in_range = (flat >= 0) & (flat < self.vocab_size)
        return ids.with_flat_values(tf.where(in_range, flat, tf.cast(self.unk_id, tf.int64)))

    @tf.function(reduce_retracing=True, autograph=False)
    def detokenize(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor:
        """Piece ids to strings, dropping every reserved token except `[UNK]`.

        `##` pieces join the previous piece, words one space. Nothing after `[END]` is cut
        (trim at `end_id` first if needed); ids outside the vocabulary read as `[UNK]`.

        Args:
            ids: `(batch, len)` ids, a dense int32/int64 tensor (padding 0 is
                dropped) or a `tf.RaggedTensor` such as `tokenize`'s output.

        Returns:
            `(batch,)` tf.string, UTF-8.
        """
        ids = self._clean_ids(ids)
        keep = (ids >= len(RESERVED_TOKENS)) | tf.equal(ids, self.unk_id)
        ids = tf.ragged.boolean_mask(ids, keep)
        flat = ids.flat_values
        glue = tf.where(tf.gather(self._piece_is_suffix, flat), "", " ")
        pieces = ids.with_flat_values(glue + tf.gather(self._piece_text, flat))
        return tf.strings.regex_replace(tf.strings.reduce_join(pieces, axis=-1), "^ ", "")

    @tf.function(reduce_retracing=True, autograph=False)
    def lookup(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Ids to their token strings (`"##"` kept), e.g. to label attention plots.

        Args:
            ids: `(batch, len)` ids, dense or ragged, any integer dtype.

        Returns:
            `tf.string` of the same shape (dense in, dense out; ragged in, ragged out).
            Ids outside the vocabulary read as `"[UNK]"`.
        """
        tokens = tf.gather(self._tokens, self._clean_ids(ids))
        return tokens if isinstance(ids, tf.RaggedTensor) else tokens.to_tensor()

    def save(self, directory: str | os.PathLike) -> str:
        """Writes `directory/vocab.txt`, one token per line (UTF-8), and returns its path."""
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(os.fspath(directory), VOCAB_FILENAME)
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write("\n".join(self._vocabulary) + "\n")
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_bytes_per_word: int = 200) -> WordPieceTokenizer:
        """Reads a vocabulary written by `save`.

        Args:
            path: the `vocab.txt` file or the directory holding it.
            max_bytes_per_word: see the class docstring.

        Returns:
            A `WordPieceTokenizer` giving the same ids as the saved one.
        """
        path = os.fspath(path)
        if os.path.isdir(path):
            path = os.path.join(path, VOCAB_FILENAME)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"path={path!r} is not a vocabulary file; pass the vocab.txt written by "
                "WordPieceTokenizer.save() or its directory"
            )
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                # "\n" only: str.splitlines() also splits on \x1c, \u2028, ... inside tokens
                vocab = handle.read().split("\n")
        except UnicodeDecodeError as error:  # a damaged or foreign file: the user's to fix
            raise UserInputError(
                f"path={path!r} is not UTF-8 text ({error.reason}); pass the vocab.txt written "
                "by WordPieceTokenizer.save()"
            ) from None
        if vocab and vocab[-1] == "":
            vocab.pop()
        vocab = [token[:-1] if token.endswith("\r") else token for token in vocab]
        return cls(vocab, max_bytes_per_word=max_bytes_per_word)

    def __repr__(self) -> str:
        return f"WordPieceTokenizer(vocab_size={self.vocab_size})"
