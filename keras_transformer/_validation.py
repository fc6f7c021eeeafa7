"""Argument checks shared by layers and builders: one clear message each."""

from __future__ import annotations


def check_positive_int(name: str, value) -> None:
    """Raise `ValueError` unless `value` is an int > 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} must be a positive integer; received {name}={value!r}.")


def check_rate(name: str, value) -> None:
    """Raise `ValueError` unless `value` is a number in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(
            f"{name} must be a number in [0, 1); received {name}={value!r}. Use 0.0 to disable it."
        )


def check_divisible(d_model: int, num_heads: int) -> None:
    """Raise `ValueError` unless `d_model` splits evenly into `num_heads` heads."""
    if d_model % num_heads:
        raise ValueError(
            f"d_model={d_model} must be divisible by num_heads={num_heads}; "
            f"pick num_heads among the divisors of d_model or pass key_dim explicitly."
        )
