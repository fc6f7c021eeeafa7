"""SavedModel export of a `Translator` for TensorFlow Serving: strings in, strings out."""

from __future__ import annotations

import logging
import os
import re

import tensorflow as tf

from keras_transformer._validation import check_alpha, check_beam_size, check_int


class _ServingModule(tf.Module):
    """The model's variables, both vocabularies and `serve`: `text` -> `translation`."""

    def __init__(self, translator, beam_size: int, alpha: float):
        super().__init__(name="translator_export")
        self.model = translator.model
        self.source_tokenizer = translator.source_tokenizer
        self.target_tokenizer = translator.target_tokenizer
        search = translator.search_function(beam_size, alpha, jit_compile=False)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(text):
            return {"translation": search(text)}

        self.serve = serve


def next_version(export_dir: str | os.PathLike) -> int:
    """1 + the largest integer-named subdirectory of `export_dir` (1 if none)."""
    names = os.listdir(export_dir) if os.path.isdir(export_dir) else []
    return max([int(n) for n in names if re.fullmatch(r"\d+", n)], default=0) + 1


def export_translator(
    translator,
    export_dir: str | os.PathLike,
    version: int | None = None,
    *,
    beam_size: int | None = None,
    alpha: float | None = None,
) -> str:
    """Write `translator` as a SavedModel at `export_dir/<version>/` for TF Serving.

    `serving_default` maps `text` to `translation` (tf.string `[None]`) in the graph
    (tensorflow-text ops, no Python ops, no XLA), exactly like the `Translator`.

    Args:
        translator: a `keras_transformer.inference.Translator`.
        export_dir: the model base directory TF Serving watches.
        version: version number (never overwritten; default: the next free one).
        beam_size: 1 for greedy decoding, more for beam search; None: the translator's
            `decoding` (for `Translator.from_run_dir`, the search the run chose).
        alpha: length-penalty exponent of beam search; None: the `decoding`'s.

    Returns:
        The path of the written version directory.
    """
    if beam_size is not None:
        check_beam_size(beam_size)  # before any tracing or writing
    if alpha is not None:
        check_alpha(alpha)
    export_dir = os.fspath(export_dir)
    version = next_version(export_dir) if version is None else version
    check_int("version", version)
    path = os.path.join(export_dir, str(version))
    if os.path.exists(path):
        raise FileExistsError(
            f"{path} already exists and is never overwritten; omit the version "
            f"to write version {next_version(export_dir)}."
        )
    module = _ServingModule(translator, beam_size, alpha)
    tf_logger = tf.get_logger()  # the save logs "Assets written to: ..." at INFO
    level = tf_logger.level
    tf_logger.setLevel(max(level, logging.WARNING))
    try:
        tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    finally:
        tf_logger.setLevel(level)
    return path
