"""The devices a run uses: `set_up_devices(config)`, once, first thing in `train`.

Data-parallel training with `tf.distribute` (`"none"`, `"mirrored"`, `"multiworker"`, `"tpu"`):
Keras splits each global batch (`--batch-size`) across the replicas; only the chief writes the
run directory (`write_dir`; docs/scaling.md). Mixed precision and XLA are chosen for the GPUs
present (`resolve_precision`, `use_xla`).
"""

import json
import logging
import os
from typing import Any, NamedTuple

import keras
import tensorflow as tf

from keras_transformer._validation import check_int
from keras_transformer.choices import PRECISIONS, STRATEGIES
from keras_transformer.errors import UserInputError

__all__ = [
    "Devices",
    "check_global_batch",
    "check_strategy_options",
    "configure_cpu_devices",
    "is_chief",
    "make_strategy",
    "prepare_for_strategy",
    "resolve_precision",
    "set_up_devices",
    "use_xla",
    "write_dir",
]

logger = logging.getLogger(__name__)


def check_strategy_options(name: str, cpu_devices: int | None = None) -> None:
    """`ValueError` unless `name` is in `STRATEGIES` and `cpu_devices` None or >= 1 (mirrored)."""
    if name not in STRATEGIES:
        raise UserInputError(
            f"strategy={name!r} is not supported; use one of {', '.join(STRATEGIES)} "
            "(--strategy none trains on one device)."
        )
    if cpu_devices is None:
        return
    hint = " --cpu-devices 2 splits the CPU into two logical devices; leave it out for the GPUs."
    check_int("cpu_devices", cpu_devices, hint=hint)
    if name != "mirrored":
        raise UserInputError(
            f"cpu_devices={cpu_devices} (--cpu-devices) only applies to strategy='mirrored'; "
            f"received strategy={name!r}. Pass --strategy mirrored --cpu-devices "
            f"{cpu_devices}, or drop --cpu-devices."
        )


def configure_cpu_devices(count: int) -> list[str]:
    """Split the first physical CPU into `count` logical devices (before any TensorFlow op).

    Returns:
        The logical CPU device names, e.g. `["/device:CPU:0", "/device:CPU:1"]`.

    Raises:
        TypeError, ValueError: if `count` is not an int >= 1.
        RuntimeError: if TensorFlow is already initialized with another number of CPU devices.
    """
    check_strategy_options("mirrored", count)
    cpu = tf.config.list_physical_devices("CPU")[0]
    if len(tf.config.get_logical_device_configuration(cpu) or ()) != count:
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
            )
        except RuntimeError as error:
            raise RuntimeError(
                f"cannot split the CPU into cpu_devices={count} logical devices: TensorFlow "
                f"is already initialized ({error}). Call make_strategy('mirrored', "
                f"cpu_devices={count}) before any TensorFlow op runs, e.g. first thing in a "
                "fresh process."
            ) from None
    return [device.name for device in tf.config.list_logical_devices("CPU")]


def _tf_config() -> dict[str, Any]:
    """The parsed `TF_CONFIG` environment variable; `ValueError` naming the fix if unusable."""
    example = (
        'TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", "host2:12345"]}, '
        '"task": {"type": "worker", "index": 0}}\''
    )
    raw = os.environ.get("TF_CONFIG", "")
    if not raw.strip():
        raise UserInputError(
            "strategy='multiworker' needs the TF_CONFIG environment variable, which is "
            f"not set. Set it on every worker, e.g. {example} (index 1 on the second "
            "worker), or use --strategy mirrored on a single machine."
        )
    try:
        tf_config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise UserInputError(
            f"TF_CONFIG is not valid JSON ({error}): received {raw!r}; expected e.g. {example}."
        ) from None
    parts = tf_config if isinstance(tf_config, dict) else {}
    task, cluster = parts.get("task"), parts.get("cluster")
    if not (isinstance(cluster, dict) and isinstance(task, dict) and {"type", "index"} <= {*task}):
        raise UserInputError(
            f"TF_CONFIG must hold 'cluster' and 'task' (with 'type' and 'index'); "
            f"received {raw!r}; expected e.g. {example}."
        )
    return tf_config


class _MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`MultiWorkerMirroredStrategy` whose `reduce` drops the `axis` of scalars: Keras 3.15's
    multi-worker `fit` reduces each logged metric with `axis=0`, which TensorFlow rejects."""

    def reduce(self, reduce_op: Any, value: Any, axis: int | None = None) -> Any:
        local = self.experimental_local_results(value)
        scalars = all(getattr(v, "shape", None) is not None and v.shape.rank == 0 for v in local)
        return super().reduce(reduce_op, value, None if scalars else axis)


def _tpu_strategy(tpu: str | None) -> tf.distribute.Strategy:
    address = tpu or os.environ.get("TPU_NAME") or "local"
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=address)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        # TensorFlow's message can run to a page: keep its first sentence.
        detail = " ".join(str(error).split()).split(". ")[0][:200] or "no TPU system device"
        raise UserInputError(
            f"strategy='tpu' found no TPU at tpu={address!r} ({type(error).__name__}: "
            f"{detail}). Run on a Cloud TPU VM (tpu='local') or set TPU_NAME to the TPU's "
            "name or grpc:// address; elsewhere use --strategy mirrored or none."
        ) from None
    return tf.distribute.TPUStrategy(resolver)


def make_strategy(
    name: str = "none", cpu_devices: int | None = None, *, tpu: str | None = None
) -> tf.distribute.Strategy:
    """The `tf.distribute.Strategy` called `name`; call it before any other TensorFlow op.

    Args:
        name: `"none"` (one device), `"mirrored"` (local GPUs, or `cpu_devices` logical CPUs),
            `"multiworker"` (`MultiWorkerMirroredStrategy` from `TF_CONFIG`) or `"tpu"`.
        cpu_devices: with `"mirrored"` only: split the CPU into this many logical devices.
        tpu: with `"tpu"` only: TPU name or `grpc://` address (default `$TPU_NAME`, else "local").

    Returns:
        A `tf.distribute.Strategy` splitting the global batch over `num_replicas_in_sync`.

    Raises:
        ValueError: on a bad `name` or `cpu_devices`, a bad `TF_CONFIG`, or no TPU found.

    Example:
    >>> make_strategy("none").num_replicas_in_sync
    1
    """
    check_strategy_options(name, cpu_devices)
    if tpu is not None and name != "tpu":
        raise UserInputError(f"tpu={tpu!r} only applies to strategy='tpu'; received {name!r}.")
    if name == "none":
        strategy = tf.distribute.get_strategy()
    elif name == "mirrored":
        devices = configure_cpu_devices(cpu_devices) if cpu_devices else None
        strategy = tf.distribute.MirroredStrategy(devices=devices)
    elif name == "multiworker":
        tf_config = _tf_config()
        strategy = _MultiWorkerMirroredStrategy()
        task, cluster = tf_config["task"], tf_config["cluster"]
        logger.info("multi-worker: task %s %s of cluster %s", task["type"], task["index"], cluster)
    else:
        strategy = _tpu_strategy(tpu)
    replicas = strategy.num_replicas_in_sync
    logger.debug("strategy %s: %d replica(s) in sync", type(strategy).__name__, replicas)
    return strategy


def _task(strategy: tf.distribute.Strategy) -> tuple[str | None, int | None, dict]:
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None:
        return None, None, {}
    return resolver.task_type, resolver.task_id, resolver.cluster_spec().as_dict()


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run directory (single process, chief, or worker 0)."""
    task_type, task_id, cluster = _task(strategy)
    if task_type is None or not cluster or task_type == "chief":
        return True
    return task_type == "worker" and task_id == 0 and "chief" not in cluster


def write_dir(run_dir: str, strategy: tf.distribute.Strategy) -> str:
    """`run_dir` on the chief, else `<run_dir>/workertemp_<task_id>` (every worker must save)."""
    if is_chief(strategy):
        return run_dir
    _, task_id, _ = _task(strategy)
    return os.path.join(run_dir, f"workertemp_{task_id}")


def check_global_batch(batch_size: int, strategy: tf.distribute.Strategy) -> int:
    """The per-replica batch of the global `batch_size`.

    Raises:
        ValueError: if `batch_size` is not a multiple of `strategy.num_replicas_in_sync`.
    """
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        lower = max(replicas, batch_size // replicas * replicas)
        raise UserInputError(
            f"batch_size={batch_size} (the global batch, --batch-size) must be divisible "
            f"by the {replicas} replicas in sync; use e.g. --batch-size {lower} or "
            f"{lower + replicas}."
        )
    return batch_size // replicas


def prepare_for_strategy(model: keras.Model, element_spec: Any) -> keras.Model:
    """Let `model.fit` / `evaluate` build from `element_spec`, not a reduced distributed batch.

    Keras 3.15 averages the first distributed batch to read its shapes, which fails for a
    multi-tensor batch under multi-worker (keras#20585, #20329) or an uneven mirrored split.

    Args:
        model: a compiled model built inside `strategy.scope()`.
        element_spec: `dataset.element_spec` of the `(inputs, labels)` batches.

    Returns:
        `model`, for chaining.
    """
    if (original := getattr(model, "_maybe_symbolic_build", None)) is None:  # another Keras
        return model

    def build(iterator: Any = None, data_batch: Any = None) -> Any:
        return original(data_batch=element_spec if data_batch is None else data_batch)

    model._maybe_symbolic_build = build
    return model


def resolve_precision(setting: str | None) -> str | None:
    """`"auto"` -> `"bf16"` on GPUs of compute capability >= 8.0, `"fp16"` >= 7.0, else None.

    Example:
    >>> resolve_precision("fp16"), resolve_precision("none")
    ('fp16', None)
    """
    if setting != "auto":
        return None if setting == "none" else setting
    capabilities = [
        tf.config.experimental.get_device_details(gpu).get("compute_capability", (0, 0))
        for gpu in tf.config.list_physical_devices("GPU")
    ]
    lowest = min(capabilities, default=(0, 0))
    return "bf16" if lowest >= (8, 0) else "fp16" if lowest >= (7, 0) else None


def use_xla(setting: str) -> bool:
    """`auto`: XLA on when a GPU is present (it slows small models on CPU)."""
    if setting == "auto":
        return bool(tf.config.list_physical_devices("GPU"))
    return setting == "on"


class Devices(NamedTuple):
    """What `set_up_devices` chose: the strategy, the batch per replica, the precision (`None`,
    `"fp16"`, `"bf16"`) and whether XLA compiles the steps."""

    strategy: tf.distribute.Strategy
    per_replica_batch: int
    precision: str | None
    xla: bool

    @property
    def replicas(self) -> int:
        return self.strategy.num_replicas_in_sync

    def describe(self, batch_size: int) -> str:
        """`1 GPU(s); batch size 64`: the log line of a run's devices."""
        gpus = tf.config.list_physical_devices("GPU")
        found = f"{len(gpus)} GPU(s)" if gpus else "CPU only (no GPU found)"
        if self.replicas == 1:
            return f"{found}; batch size {batch_size}"
        return (
            f"{found}; global batch {batch_size} = {self.replicas} replicas x "
            f"{self.per_replica_batch}"
        )


def set_up_devices(config) -> Devices:
    """The strategy (`config.strategy`, `cpu_devices`; the first TensorFlow call: logical devices
    and collectives are fixed at start-up), the global batch checked against its replicas, and
    the precision (set as Keras's global policy) and XLA of `config`."""
    strategy = make_strategy(config.strategy, config.cpu_devices)
    per_replica = check_global_batch(config.batch_size, strategy)
    precision = resolve_precision(config.mixed_precision)
    keras.mixed_precision.set_global_policy(PRECISIONS[precision])
    devices = Devices(strategy, per_replica, precision, use_xla(config.jit_compile))
    logger.info("devices: %s", devices.describe(config.batch_size))
    return devices
