"""SavedModel export of a `Translator` for TensorFlow Serving: strings in, strings out."""

from __future__ import annotations

import os
import re

import tensorflow as tf

from keras_transformer.inference.translator import check_beam_size


class _ServingModule(tf.Module):
    """What the SavedModel holds: the model's variables, both vocabularies and
    one `serving_default` function `text` -> `translation`."""

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
    if not os.path.isdir(export_dir):
        return 1
    versions = [int(n) for n in os.listdir(export_dir) if re.fullmatch(r"\d+", n)]
    return max(versions, default=0) + 1


def export_translator(
    translator,
    export_dir: str | os.PathLike,
    version: int | None = None,
    *,
    beam_size: int = 1,
    alpha: float = 0.6,
) -> str:
    """Write `translator` as a SavedModel at `export_dir/<version>/` for TF Serving.

    The `serving_default` signature takes `text` (tf.string, shape `[None]`)
    and returns `translation` (tf.string, shape `[None]`). Tokenization
    (tensorflow-text ops, which TF Serving links), the encoder, the cached
    search and detokenization all run in the graph; there are no Python-function
    ops and no XLA is required. A client needs only `tensorflow` and
    `tensorflow_text` to load it. The export translates exactly like the
    `Translator` (without XLA): an input with no tokens (empty or
    whitespace-only) translates to `""`, decided in the graph.

    Versions follow TF Serving's layout: without `version`, the next integer
    after the existing ones is used; an existing version is never overwritten.

    Args:
        translator: a `keras_transformer.inference.Translator`.
        export_dir: the model base directory TF Serving watches.
        version: explicit version number (must not exist yet).
        beam_size: 1 for greedy decoding, more for beam search.
        alpha: length-penalty exponent of beam search.

    Returns:
        The path of the written version directory.
    """
    check_beam_size(beam_size)  # before any tracing or writing
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise ValueError(f"alpha must be a number (e.g. 0.6); received alpha={alpha!r}.")
    export_dir = os.fspath(export_dir)
    if version is None:
        version = next_version(export_dir)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be a positive integer; received version={version!r}.")
    path = os.path.join(export_dir, str(version))
    if os.path.exists(path):
        raise FileExistsError(
            f"{path} already exists and is never overwritten; omit the version to write "
            f"version {next_version(export_dir)}."
        )
    module = _ServingModule(translator, beam_size, alpha)
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return path
