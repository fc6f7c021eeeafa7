"""Data-parallel training with `tf.distribute`: the names of `training.devices`, the one
devices module, under their earlier import path."""

from keras_transformer.training.devices import check_global_batch as check_global_batch
from keras_transformer.training.devices import check_strategy_options as check_strategy_options
from keras_transformer.training.devices import configure_cpu_devices as configure_cpu_devices
from keras_transformer.training.devices import is_chief as is_chief
from keras_transformer.training.devices import make_strategy as make_strategy
from keras_transformer.training.devices import prepare_for_strategy as prepare_for_strategy
from keras_transformer.training.devices import write_dir as write_dir
