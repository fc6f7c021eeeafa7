"""Data-parallel training with `tf.distribute`: the names of `training.devices`, the one
devices module, under their earlier import path."""

from keras_transformer.training.devices import (
    check_global_batch,
    check_strategy_options,
    configure_cpu_devices,
    is_chief,
    make_strategy,
    prepare_for_strategy,
    write_dir,
)

__all__ = [
    "check_global_batch",
    "check_strategy_options",
    "configure_cpu_devices",
    "is_chief",
    "make_strategy",
    "prepare_for_strategy",
    "write_dir",
]
