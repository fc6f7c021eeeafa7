"""A WordPiece tokenizer that keeps case and accents and runs in the TensorFlow graph.

Text is first normalised (`keras_transformer.data.normalize`: NFC, every Unicode
space as one ASCII space), then split into words on spaces only; WordPiece
(tensorflow-text) then splits each word into pieces, marking every piece after
the first with `##`.
Punctuation therefore stays inside its word ("twenty-four" -> `twenty`, `##-`,
`##four`), and detokenizing glues the `##` pieces back onto their word and joins
words with one space. The round trip is exact up to normalisation:
`detokenize(tokenize(s)) == normalize_text(s)` for any text whose characters
were seen when the vocabulary was learned.

CJK ideographs are learned as one piece each, as multilingual BERT splits them:
words of scripts written without spaces (Chinese, Japanese kanji) are whole
phrases, and the learner would otherwise keep frequent phrases as pieces
(`##百二十三`) that a model must memorise one by one; numbers en->ja then needed
10 epochs to 0.999 exact match, with one character per piece 2. Words of Thai,
Lao, Myanmar and Khmer, also written without spaces, get their pieces from
byte-pair merges instead (see `_merged_pieces`).

Nothing is lower-cased or accent-stripped (tensorflow-text's
`BertTokenizer(lower_case=True)` turns "fünf" into "funf"), because the package
scores the detokenized strings a user reads.
"""

from __future__ import annotations

import collections
import itertools
import os
import re
from collections.abc import Iterable, Sequence

import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from keras_transformer.data.normalize import normalize_text_tensor

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


def _is_suffix(token: str) -> bool:
    return token.startswith(SUFFIX_INDICATOR) and len(token) > len(SUFFIX_INDICATOR)


def _merged_pieces(counts: dict[str, int], max_merges: int) -> set[str]:
    """The pieces of `counts`' words after byte-pair merges (later pieces with `##`).

    Merges the most frequent adjacent pair while it occurs >= `_MIN_MERGE_COUNT`
    times. tensorflow-text's learner counts every prefix of a word against its
    shorter prefixes, which leaves unspaced text without word-start pieces: Thai
    numbers were 12 pieces each and needed 12 epochs to 0.99 exact match; after
    merges they are 4 (3 epochs). Merging down to 10 occurrences gave long pieces
    seen a few times each, and 12 epochs again.
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
        raise ValueError(
            f"vocab must start with the reserved tokens {list(RESERVED_TOKENS)} in this order, "
            f"got {list(vocab[: len(RESERVED_TOKENS)])}; build it with WordPieceTokenizer.learn() "
            "or prepend the reserved tokens"
        )
    if len(vocab) == len(RESERVED_TOKENS):
        raise ValueError("vocab holds only the reserved tokens; it needs at least one text piece")
    seen: set[str] = set()
    for index, token in enumerate(vocab):
        if not isinstance(token, str) or not token:
            raise ValueError(f"vocab[{index}]={token!r} must be a non-empty string")
        if len(token.split()) != 1 or token.strip() != token:
            raise ValueError(
                f"vocab[{index}]={token!r} contains whitespace; pieces are parts of "
                "whitespace-separated words, so remove it"
            )
        if token in seen:
            raise ValueError(f"vocab[{index}]={token!r} is a duplicate; every token must be unique")
        seen.add(token)


def _split_words(strings: tf.Tensor) -> tf.RaggedTensor:
    """Normalise (`normalize_text_tensor`), then split on the single spaces left.

    The same in `learn` and `tokenize`. (batch,) -> (batch, words).
    """
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


class WordPieceTokenizer(tf.Module):
    """WordPiece tokenizer (tensorflow-text) that keeps case and accents.

    A `tf.Module`: `tokenize`, `detokenize` and `lookup` are `tf.function`s made of
    TensorFlow ops only, so the tokenizer runs inside `tf.data` pipelines and can be
    saved in a SavedModel (`tf.saved_model.save`) and served without Python.

    Words are whitespace-separated; WordPiece splits inside each word (greedy
    longest match first), so punctuation and hyphens become `##` pieces and come
    back exactly. A word containing a character missing from the vocabulary, or
    longer than `max_bytes_per_word` UTF-8 bytes, becomes one `[UNK]` token (never
    an error). Words that themselves begin with `##` may not round-trip, since
    WordPiece cannot tell them from continuation pieces.

    The first six ids are reserved: `[PAD]`=0, `[UNK]`=1, `[START]`=2, `[END]`=3,
    `[SEP]`=4, `[MASK]`=5 (attributes `pad_id`, `unk_id`, `start_id`, `end_id`,
    `sep_id`, `mask_id`). `tokenize` never emits them except `[UNK]` (a literal
    "[START]" in the text is spelled with ordinary pieces); `detokenize` drops all
    of them except `[UNK]`, which it writes as "[UNK]".

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

    pad_id: int = 0
    unk_id: int = 1
    start_id: int = 2
    end_id: int = 3
    sep_id: int = 4
    mask_id: int = 5

    def __init__(
        self,
        vocab: Sequence[str],
        *,
        max_bytes_per_word: int = 200,
        name: str | None = None,
    ) -> None:
        super().__init__(name=name)
        vocab = list(vocab)
        _validate_vocab(vocab)
        if isinstance(max_bytes_per_word, bool) or not isinstance(max_bytes_per_word, int):
            raise TypeError(f"max_bytes_per_word={max_bytes_per_word!r} must be an int, e.g. 200")
        if max_bytes_per_word < 1:
            raise ValueError(f"max_bytes_per_word={max_bytes_per_word} must be >= 1, e.g. 200")
        self._vocabulary = tuple(vocab)
        self.max_bytes_per_word = max_bytes_per_word

        # Reserved tokens other than [UNK] get keys with a space, which no
        # whitespace-split word can contain, so the text "[PAD]" never maps to id 0.
        keys = [
            f" {token}" if i < len(RESERVED_TOKENS) and i != self.unk_id else token
            for i, token in enumerate(vocab)
        ]
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(keys, dtype=tf.string),
                tf.range(len(vocab), dtype=tf.int64),
            ),
            default_value=self.unk_id,
        )
        longest_piece = max(len(t[len(SUFFIX_INDICATOR) :] if _is_suffix(t) else t) for t in vocab)
        self._wordpiece = tf_text.WordpieceTokenizer(
            self._table,
            suffix_indicator=SUFFIX_INDICATOR,
            max_bytes_per_word=max_bytes_per_word,
            max_chars_per_token=longest_piece,
            token_out_type=tf.int64,
            unknown_token=RESERVED_TOKENS[self.unk_id],
        )
        self._tokens = tf.constant(vocab, dtype=tf.string)
        self._piece_text = tf.constant(
            [t[len(SUFFIX_INDICATOR) :] if _is_suffix(t) else t for t in vocab], dtype=tf.string
        )
        self._piece_is_suffix = tf.constant([_is_suffix(t) for t in vocab], dtype=tf.bool)
        # Trace the id-consuming functions for the usual inputs so that
        # tf.saved_model.save(tokenizer, ...) exports them (dense and ragged ids).
        for spec in (
            tf.TensorSpec([None, None], tf.int64),
            tf.TensorSpec([None, None], tf.int32),
            tf.RaggedTensorSpec([None, None], tf.int64, ragged_rank=1),
        ):
            self.detokenize.get_concrete_function(spec)
            self.lookup.get_concrete_function(spec)

    # ------------------------------------------------------------------ learning

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
    ) -> WordPieceTokenizer:
        """Learns a WordPiece vocabulary from training text.

        Words are counted after the same whitespace split `tokenize` uses, then
        tensorflow-text's `wordpiece_tokenizer_learner_lib.learn` (the algorithm
        behind `bert_vocab_from_dataset`) picks the pieces (byte-pair merges pick
        them for words of Thai, Lao, Myanmar and Khmer). Every character seen
        in `texts` is then added, if missing, both as a piece and as a `##` piece,
        so text made of seen characters never produces `[UNK]`; learned pieces of
        several characters with a CJK ideograph among them are dropped.

        `vocab_size` is a target, not a promise: the learner stops within 5% below
        it or when the text has no more frequent pieces to offer (a corpus of
        number words needs a few hundred), and the added characters may push a
        tiny vocabulary above it.

        Args:
            texts: training sentences (str).
            vocab_size: target vocabulary size, reserved tokens included.
            lower_thresh: smallest piece count the learner's threshold search tries.
            max_word_length: words longer than this many characters are left out
                of *learning* (they are still tokenized, from the learned pieces).
                The learner's cost grows with the cube of word length, so this
                keeps learning on long compounds (German "einhundertdreiund...")
                to seconds.
            num_iterations: refinement iterations of the learner.
            max_bytes_per_word: see the class docstring.

        Returns:
            A `WordPieceTokenizer`.
        """
        texts = list(texts)
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int):
            raise TypeError(f"vocab_size={vocab_size!r} must be an int, e.g. 8000")
        if vocab_size <= len(RESERVED_TOKENS):
            raise ValueError(
                f"vocab_size={vocab_size} must be larger than the {len(RESERVED_TOKENS)} "
                "reserved tokens, e.g. 8000"
            )
        for name, value in (
            ("lower_thresh", lower_thresh),
            ("max_word_length", max_word_length),
            ("num_iterations", num_iterations),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r} must be a positive int")
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(
                    f"texts[{index}]={text!r} is a {type(text).__name__}; pass a list of str"
                )
        counts = count_words(texts)
        if not counts:
            raise ValueError(
                f"texts (got {len(texts)} strings) contain no words; pass non-empty training text"
            )
        chars = sorted({char for word in counts for char in word})
        unspaced = {word: count for word, count in counts.items() if _UNSPACED.search(word)}
        spaced = [(word, count) for word, count in counts.items() if word not in unspaced]
        vocab = list(RESERVED_TOKENS)
        if spaced:
            vocab = learner.learn(
                spaced,
                vocab_size=vocab_size,
                reserved_tokens=list(RESERVED_TOKENS),
                lower_thresh=lower_thresh,
                num_iterations=num_iterations,
                max_token_length=max_word_length,
                max_unique_chars=len(chars),
                include_joiner_token=True,
                joiner=SUFFIX_INDICATOR,
            )
        vocab += sorted(_merged_pieces(unspaced, vocab_size) - set(vocab)) if unspaced else []
        vocab = [
            t for t in vocab if len(t.removeprefix(SUFFIX_INDICATOR)) == 1 or not _CJK.search(t)
        ]
        present = set(vocab)
        for char in chars:
            for token in (char, SUFFIX_INDICATOR + char):
                if token not in present:
                    vocab.append(token)
                    present.add(token)
        return cls(vocab, max_bytes_per_word=max_bytes_per_word)

    # ------------------------------------------------------------------ properties

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

    # ------------------------------------------------------------------ graph functions

    # autograph=False: the bodies have no tensor-dependent Python control flow, and
    # autograph's conversion of tf.Module methods intermittently bound `self` to
    # TensorFlow's internal `TfMethodTarget` ("'TfMethodTarget' object has no
    # attribute '_clean_ids'", seen once in three runs of a notebook).
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def tokenize(self, strings: tf.Tensor) -> tf.RaggedTensor:
        """Strings to piece ids, without `[START]`/`[END]`.

        Args:
            strings: `(batch,)` tf.string (or a list of str).

        Returns:
            `tf.RaggedTensor` int64 of shape `(batch, None)`.
        """
        words = _split_words(strings)  # (batch, words)
        pieces = self._wordpiece.tokenize(words)  # (batch, words, pieces)
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

        `##` pieces are glued onto the preceding piece, words are joined by one
        space. Padding, `[START]` and `[END]` anywhere are ignored (nothing after
        `[END]` is cut off: trim model outputs at `end_id` first if needed). Ids
        outside the vocabulary read as `[UNK]`.

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
        joined = tf.strings.reduce_join(pieces, axis=-1)
        return tf.strings.regex_replace(joined, "^ ", "")

    @tf.function(reduce_retracing=True, autograph=False)
    def lookup(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """Ids to their token strings (`"##"` kept), e.g. to label attention plots.

        Args:
            ids: `(batch, len)` ids, dense or ragged, any integer dtype.

        Returns:
            `tf.string` of the same shape (dense in, dense out; ragged in, ragged out).
            Ids outside the vocabulary read as `"[UNK]"`.
        """
        dense = not isinstance(ids, tf.RaggedTensor)
        tokens = tf.gather(self._tokens, self._clean_ids(ids))
        return tokens.to_tensor() if dense else tokens

    # ------------------------------------------------------------------ files

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
        with open(path, encoding="utf-8", newline="") as handle:
            text = handle.read()
        # Split on "\n" only: str.splitlines() would also split on rare characters
        # (\x1c, \u2028, ...) that can be part of a token.
        vocab = text.split("\n")
        if vocab and vocab[-1] == "":
            vocab.pop()
        vocab = [token[:-1] if token.endswith("\r") else token for token in vocab]
        return cls(vocab, max_bytes_per_word=max_bytes_per_word)

    def __repr__(self) -> str:
        return f"WordPieceTokenizer(vocab_size={self.vocab_size})"
