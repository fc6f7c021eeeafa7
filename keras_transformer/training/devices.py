"""The devices a run uses: mixed precision and XLA chosen for the GPUs present."""

from __future__ import annotations


def resolve_precision(setting: str | None) -> str | None:
    """`"auto"` -> `"bf16"` on GPUs of compute capability >= 8.0, `"fp16"` >= 7.0, else None.

    Example:
    >>> resolve_precision("fp16"), resolve_precision("none")
    ('fp16', None)
    """
    if setting != "auto":
        return None if setting == "none" else setting
    import tensorflow as tf

    capabilities = [
        tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
        for gpu in tf.config.list_physical_devices("GPU")
    ]
    lowest = min(capabilities, default=(0, 0))
    return "bf16" if lowest >= (8, 0) else "fp16" if lowest >= (7, 0) else None


def use_xla(setting: str) -> bool:
    """`auto`: XLA on when a GPU is present (it slows small models on CPU)."""
    if setting == "auto":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    return setting == "on"
