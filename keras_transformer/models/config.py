"""`TransformerConfig`: the sizes of every Transformer this package builds, in one place."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

from keras_transformer._validation import (
    check_divisible,
    check_max_length,
    check_num_heads,
    check_positive_int,
    check_rate,
)


@dataclass(frozen=True)
class TransformerConfig:
    """Model hyperparameters, validated once; every builder and run config uses them.

    Defaults: a small model of the paper's shape (base: `num_layers=6, d_model=512, num_heads=8,
    dff=2048`), the sizes `keras-transformer train` uses when its size flags are left out.

    Args:
        num_layers, d_model: layers per stack (N); model width.
        num_heads, dff: attention heads (must divide `d_model`); feed-forward inner size.
        dropout, attention_dropout: residual and embedding dropout; on attention weights.
        max_length: positions of the position table (the longest sequence).
        norm_first, activation: pre-LN (adds a final LayerNorm); feed-forward activation.
        learned_positions: learned position embeddings instead of the sinusoid.

    Example:
    >>> config = TransformerConfig(num_layers=2, d_model=64, num_heads=4)
    >>> TransformerConfig.from_json(config.to_json()) == config
    True
    >>> TransformerConfig(d_model=130)
    Traceback (most recent call last):
    ...
    keras_transformer.errors.UserInputError: d_model=130 must be divisible by num_heads=4 (each head gets d_model / num_heads dimensions); use d_model=128 or 132, or num_heads=2, 5 or 10, or pass key_dim explicitly.
    """

    num_layers: int = 2
    d_model: int = 128
    num_heads: int = 4
    dff: int = 256
    dropout: float = 0.1
    attention_dropout: float = 0.0
    max_length: int = 512
    norm_first: bool = False
    learned_positions: bool = False
    activation: str = "relu"

    def __post_init__(self):
        for name in ("num_layers", "d_model", "dff"):
            check_positive_int(name, getattr(self, name))
        check_max_length(self.max_length)
        check_num_heads(self.num_heads)
        check_rate("dropout", self.dropout)
        check_rate("attention_dropout", self.attention_dropout)
        check_divisible(self.d_model, self.num_heads)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def resolve(cls, config: TransformerConfig | None, sizes: dict) -> TransformerConfig:
        """`config` with `sizes` (a builder's keywords) replacing fields; TypeError if unknown."""
        unknown = sorted(set(sizes) - set(cls.field_names()))
        if unknown:
            raise TypeError(
                f"unexpected keyword argument(s) {unknown}; the model sizes are "
                f"{list(cls.field_names())}."
            )
        return cls(**{**(config.to_dict() if config is not None else {}), **sizes})

    def layer_kwargs(self) -> dict:
        """The arguments of `EncoderLayer` / `DecoderLayer`."""
        names = ("num_heads", "dff", "dropout", "attention_dropout", "activation", "norm_first")
        return {name: getattr(self, name) for name in names}

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, values: dict) -> TransformerConfig:
        """The config of `values`, ignoring keys that are not fields (a run's config.json)."""
        return cls(**{k: v for k, v in values.items() if k in cls.field_names()})

    @classmethod
    def from_json(cls, text: str) -> TransformerConfig:
        return cls.from_dict(json.loads(text))
