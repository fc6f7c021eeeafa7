"""Sentence vectors from an encoder, and semantic search by cosine similarity."""

import json
import os
from collections.abc import Sequence

import keras
import numpy as np

from keras_transformer._validation import check_max_length
from keras_transformer.data import WordPieceTokenizer
from keras_transformer.data.batching.framing import encode_source
from keras_transformer.errors import UserInputError
from keras_transformer.layers.sequence_pooling import SequencePooling


class SentenceEncoder:
    """Strings -> unit-length sentence vectors; ranks candidates by cosine similarity.

    Args:
        encoder: ids `(batch, seq_len)` -> `(batch, seq_len, d_model)`, e.g. `build_encoder`.
        tokenizer: the `WordPieceTokenizer` the encoder was trained with.
        pooling: `"mean"` over real tokens or `"cls"` (the `[START]` position).
        max_length: longest tokenized sentence, `[START]` and `[END]` included.
        batch_size: sentences embedded per forward pass.

    Example:
    >>> from keras_transformer.models import build_encoder
    >>> tokenizer = WordPieceTokenizer.learn(["one two three", "four five"], 40)
    >>> encoder = build_encoder(tokenizer.vocab_size, num_layers=1, d_model=8, num_heads=2, dff=16)
    >>> search = SentenceEncoder(encoder, tokenizer)
    >>> search.embed(["one two", "four"]).shape
    (2, 8)
    >>> [index for index, _ in search.rank("one two", ["four five", "one two"])]
    [1, 0]
    """

    def __init__(
        self,
        encoder: keras.Model,
        tokenizer,
        *,
        pooling: str = "mean",
        max_length: int = 64,
        batch_size: int = 256,
    ) -> None:
        if pooling not in SequencePooling.MODES:
            raise UserInputError(
                f"pooling must be one of {SequencePooling.MODES}; received pooling={pooling!r}."
            )
        check_max_length(max_length)
        self.encoder, self.tokenizer, self.pooling = encoder, tokenizer, pooling
        self.max_length, self.batch_size = max_length, batch_size
        self._pool = SequencePooling(pooling)

    def embed(self, texts: str | Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors `(len(texts), d_model)` (`(1, d_model)` for one string)."""
        texts = [texts] if isinstance(texts, str) else list(texts)
        if not texts:
            raise UserInputError("texts is empty; pass at least one string to embed.")
        chunks = []
        for begin in range(0, len(texts), self.batch_size):
            batch = texts[begin : begin + self.batch_size]
            ids = encode_source(batch, self.tokenizer, self.max_length)
            states = self.encoder(ids, training=False)  # (batch, seq_len, d_model)
            if isinstance(states, dict):
                states = states["output"]
            chunks.append(np.asarray(self._pool(states, padding_mask=np.asarray(ids) != 0)))
        vectors = np.concatenate(chunks).astype("float32")  # (n, d_model)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)

    def similarity(self, queries: str | Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Cosine similarities `(len(queries), len(candidates))`."""
        return self.embed(queries) @ self.embed(candidates).T

    def rank(
        self, query: str, candidates: Sequence[str], top_k: int | None = None
    ) -> list[tuple[int, float]]:
        """`[(index, cosine similarity), ...]` of the `top_k` (default: all) best, best first."""
        scores = self.similarity(query, candidates)[0]
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [(int(i), float(scores[i])) for i in order]


def retrieval_accuracy(
    encoder: SentenceEncoder, queries: Sequence[str], targets: Sequence[str]
) -> float:
    """Accuracy@1: how often `targets[i]` is the nearest of all `targets` to `queries[i]`.

    Example:
    >>> from keras_transformer.models import build_encoder
    >>> tokenizer = WordPieceTokenizer.learn(["a b", "c d"], 30)
    >>> search = SentenceEncoder(build_encoder(tokenizer.vocab_size, num_layers=1, d_model=8,
    ...                                        num_heads=2, dff=16), tokenizer)
    >>> retrieval_accuracy(search, ["a b", "c d"], ["a b", "c d"])
    1.0
    """
    if len(queries) != len(targets):
        raise UserInputError(
            f"queries and targets must pair up; received {len(queries)} queries and "
            f"{len(targets)} targets."
        )
    nearest = encoder.similarity(queries, targets).argmax(axis=1)
    return float(np.mean(nearest == np.arange(len(queries))))


def load_sentence_encoder(run_dir: str) -> SentenceEncoder:
    """The `SentenceEncoder` (trained encoder, the run's pooling and `max_length`) of a
    `keras-transformer train --architecture dual-encoder` run directory."""
    paths = [os.path.join(run_dir, name) for name in ("config.json", "model.keras")]
    if missing := [os.path.basename(p) for p in paths if not os.path.isfile(p)]:
        raise FileNotFoundError(
            f"{run_dir} is not a finished dual-encoder run directory (missing {missing})."
        )
    with open(paths[0]) as handle:
        config = json.load(handle)
    if config.get("architecture") != "dual-encoder":
        raise UserInputError(f"{run_dir} is not a dual-encoder run (config.json architecture).")
    encoder = keras.models.load_model(paths[1], safe_mode=True).get_layer("sentence_encoder")
    tokenizer = WordPieceTokenizer.load(os.path.join(run_dir, "tokenizers", "joint"))
    pooling, max_length = config.get("pooling", "mean"), config["max_length"]
    return SentenceEncoder(encoder, tokenizer, pooling=pooling, max_length=max_length)
