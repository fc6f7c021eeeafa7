"""Text normalisation applied before every tokenizer: one Unicode form, one kind of space.

Corpora hold U+00A0, U+202F, U+2009, U+3000 spaces and decomposed accents, and
tensorflow-text's `WhitespaceTokenizer` (2.21) splits multi-byte spaces inside their
UTF-8 bytes (`'Nummer\\xa028'` -> `[b'Nummer\\xc2', b'28']`). So, in order:

1. Invalid UTF-8 bytes become U+FFFD (only possible in the graph).
2. **NFC** (`e` + U+0301 -> `é`); not NFKC, which also rewrites `²` -> `2`, `ﬁ` -> `fi`.
3. Every whitespace run (what `str.split()` splits on) becomes one ASCII space, stripped.
   Zero-width characters (U+200B, U+200D) are kept.

`normalize_text` (Python) and `normalize_text_tensor` (TensorFlow ops) agree; the
tokenizer applies the latter, so training and SavedModel see the same text.
"""

from __future__ import annotations

import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

NORMAL_FORM = "NFC"
"""The Unicode normal form applied to all text (see the module docstring for why NFC)."""

# RE2; the same set as str.isspace() (checked over every code point in tests/data/text/test_normalize.py)
_WHITESPACE = r"[\t\n\x0b\x0c\r\x{1c}-\x{1f}\x{85}\p{Z}]+"


def normalize_text(text: str) -> str:
    """NFC text with every whitespace run as one ASCII space, stripped.

    Args:
        text: any `str`.

    Returns:
        The normalised string, as the tokenizers see it.

    Example:
    >>> normalize_text("Quoi\\u202f?  Nummer\\xa028\\u3000e\\u0301t\\u00e9\\n")
    'Quoi ? Nummer 28 été'
    """
    if not isinstance(text, str):
        raise TypeError(f"text={text!r} is a {type(text).__name__}; pass a str")
    return " ".join(unicodedata.normalize(NORMAL_FORM, text).split())


def normalize_text_tensor(strings: tf.Tensor) -> tf.Tensor:
    """`normalize_text` in TensorFlow ops, for `tf.data` and SavedModels.

    Args:
        strings: a `tf.string` tensor of any shape (UTF-8; invalid bytes become U+FFFD).

    Returns:
        A `tf.string` tensor of the same shape.
    """
    strings = tf.strings.unicode_transcode(
        strings, input_encoding="UTF-8", output_encoding="UTF-8", errors="replace"
    )
    strings = tf_text.normalize_utf8(strings, NORMAL_FORM)
    strings = tf.strings.regex_replace(strings, _WHITESPACE, " ")
    return tf.strings.regex_replace(strings, "^ | $", "")
