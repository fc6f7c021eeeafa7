"""Text normalisation applied before every tokenizer: one Unicode form, one kind of space.

Real corpora hold more than ASCII spaces: French typography puts U+00A0 or U+202F
before `? ! : ;`, web text has U+2009 and U+3000, and the same accented letter can
be one code point or a letter plus a combining accent. tensorflow-text's
`WhitespaceTokenizer` (2.21) splits multi-byte Unicode spaces inside their UTF-8
bytes (`'Nummer\\xa028'` -> `[b'Nummer\\xc2', b'28']`), so text is normalised first:

1. Invalid UTF-8 bytes become U+FFFD (only possible inside the graph, where a
   client may send any bytes; Python `str` is always valid).
2. Unicode normal form **NFC**: canonically equivalent spellings become one
   (`e` + U+0301 -> `é`). NFC, not NFKC, because NFKC also rewrites characters a
   translation should keep as written: `²` -> `2`, `ﬁ` -> `fi`, full-width
   `Ａ` -> `A`, `½` -> `1⁄2`.
3. Every run of whitespace (the characters Python's `str.split()` splits on:
   ASCII tab, newline, vertical tab, form feed, carriage return, the separators
   U+001C..U+001F, U+0085, and every Unicode space or line/paragraph separator,
   category Z) becomes one ASCII space; leading and trailing spaces go.

`normalize_text` (Python) and `normalize_text_tensor` (TensorFlow ops only:
`unicode_transcode`, tensorflow-text's `normalize_utf8`, `regex_replace`) give
the same strings; the tokenizer applies the graph version inside `tokenize` and
when counting words to learn its vocabulary, so training, `translate` and the
exported SavedModel all see the same text. Zero-width characters (U+200B, the
joiner U+200D of emoji sequences) are not whitespace and are kept.
"""

from __future__ import annotations

import unicodedata

import tensorflow as tf
import tensorflow_text as tf_text

NORMAL_FORM = "NFC"
"""The Unicode normal form applied to all text (see the module docstring for why NFC)."""

# RE2 syntax; the same set as Python's str.isspace() (checked over every code point
# in tests/data/test_normalize.py).
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
