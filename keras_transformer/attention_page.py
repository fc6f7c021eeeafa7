"""`from keras_transformer import attention_page`: the attention explorer, kept at the path the
tutorials import.

The page is written by `keras_transformer.visualization.attention_page`; this module re-exports
its names.
"""

from keras_transformer.visualization.attention_page import (
    KINDS,
    attention_data,
    encoder_attention,
    explorer_page,
    inline_frame,
    render_page,
    run_attention,
    translation_attention,
    write_attention_page,
)

__all__ = [
    "KINDS",
    "attention_data",
    "encoder_attention",
    "explorer_page",
    "inline_frame",
    "render_page",
    "run_attention",
    "translation_attention",
    "write_attention_page",
]
