"""Scale training out with TensorFlow's own distribution engine (`tf.distribute`).

Data parallelism: every replica holds a copy of the model, takes its share of
the global batch, computes gradients, and the replicas sum their gradients
(an all-reduce) before every replica applies the same update. Keras does the
splitting itself: a model built and compiled inside `strategy.scope()` runs
`fit` / `evaluate` through the strategy, and the `tf.data` pipeline's batches
(the *global* batch, `--batch-size`) are cut into `num_replicas_in_sync`
per-replica batches.

- `"none"`: TensorFlow's default strategy, one device (what `train` always did).
- `"mirrored"`: `tf.distribute.MirroredStrategy`, one replica per local GPU;
  with `cpu_devices=N`, N logical CPU devices instead, which makes the
  multi-replica path testable on a CPU-only machine.
- `"multiworker"`: `tf.distribute.MultiWorkerMirroredStrategy`, synchronous
  data parallelism across processes or hosts, configured by the `TF_CONFIG`
  environment variable. Must be created before any other TensorFlow op runs.
- `"tpu"`: `tf.distribute.TPUStrategy` on a `TPUClusterResolver` (the TPU named
  by the `TPU_NAME` environment variable, `"local"` on a Cloud TPU VM).

Multi-worker file convention (as `tf.keras`'s `distributed_file_utils`): the
chief writes the real run directory; every other worker writes the same files
to `<run_dir>/workertemp_<task_id>` (`write_dir`), which it deletes at the end,
so every worker runs the same code, collective operations included, and the
files a user reads come from the chief alone.

See docs/scaling.md.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import keras
import tensorflow as tf

from keras_transformer.training.config import STRATEGIES, check_strategy_options

__all__ = [
    "STRATEGIES",
    "check_global_batch",
    "check_strategy_options",
    "configure_cpu_devices",
    "is_chief",
    "make_strategy",
    "prepare_for_strategy",
    "write_dir",
]

logger = logging.getLogger(__name__)


def configure_cpu_devices(count: int) -> list[str]:
    """Split the first physical CPU into `count` logical devices.

    TensorFlow fixes its devices when it initializes (on the first op), so this
    must run before any tensor is created. Calling it again with the same
    `count` is a no-op.

    Args:
        count: int >= 1, the number of logical CPU devices.

    Returns:
        The logical CPU device names, e.g. `["/device:CPU:0", "/device:CPU:1"]`.

    Raises:
        ValueError: if `count` is not an int >= 1.
        RuntimeError: if TensorFlow is already initialized with another number
            of CPU devices.
    """
    check_strategy_options("mirrored", count)
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is None or len(current) != count:
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
        raise ValueError(
            "strategy='multiworker' needs the TF_CONFIG environment variable, which is "
            f"not set. Set it on every worker, e.g. {example} (index 1 on the second "
            "worker), or use --strategy mirrored on a single machine."
        )
    try:
        tf_config = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ValueError(
            f"TF_CONFIG is not valid JSON ({error}): received {raw!r}; expected e.g. {example}."
        ) from None
    if (
        not isinstance(tf_config, dict)
        or not isinstance(tf_config.get("cluster"), dict)
        or not isinstance(tf_config.get("task"), dict)
        or "type" not in tf_config["task"]
        or "index" not in tf_config["task"]
    ):
        raise ValueError(
            f"TF_CONFIG must hold 'cluster' and 'task' (with 'type' and 'index'); "
            f"received {raw!r}; expected e.g. {example}."
        )
    return tf_config


class _MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """`MultiWorkerMirroredStrategy` whose `reduce` accepts scalars with an `axis`.

    Keras 3.15's `fit` reduces every logged metric (a scalar per replica) with
    `strategy.reduce("MEAN", value, axis=0)` when it runs multi-worker, which
    TensorFlow rejects ("Invalid reduction dimension 0 for input with 0
    dimensions"). A scalar has no axis to reduce within a replica, so here the
    axis is dropped and the values are reduced across replicas only. Every
    other call is `MultiWorkerMirroredStrategy.reduce` unchanged.
    """

    def reduce(self, reduce_op: Any, value: Any, axis: int | None = None) -> Any:
        if axis is not None and all(
            getattr(v, "shape", None) is not None and v.shape.rank == 0
            for v in self.experimental_local_results(value)
        ):
            axis = None
        return super().reduce(reduce_op, value, axis)


def _tpu_strategy(tpu: str | None) -> tf.distribute.Strategy:
    address = tpu or os.environ.get("TPU_NAME") or "local"
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=address)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        # TensorFlow's message can run to a page: keep its first sentence.
        detail = " ".join(str(error).split()).split(". ")[0][:200] or "no TPU system device"
        raise ValueError(
            f"strategy='tpu' found no TPU at tpu={address!r} ({type(error).__name__}: "
            f"{detail}). Run on a Cloud TPU VM (tpu='local') or set TPU_NAME to the TPU's "
            "name or grpc:// address; elsewhere use --strategy mirrored or none."
        ) from None
    return tf.distribute.TPUStrategy(resolver)


def make_strategy(
    name: str = "none", cpu_devices: int | None = None, *, tpu: str | None = None
) -> tf.distribute.Strategy:
    """The `tf.distribute.Strategy` called `name`; build and compile under its scope.

    Call it first, before any other TensorFlow op: logical CPU devices and
    multi-worker collectives can only be configured before TensorFlow
    initializes.

    Args:
        name: `"none"` (one device, TensorFlow's default strategy),
            `"mirrored"` (all local GPUs, or `cpu_devices` logical CPUs),
            `"multiworker"` (`MultiWorkerMirroredStrategy` from `TF_CONFIG`) or
            `"tpu"` (`TPUStrategy`).
        cpu_devices: with `"mirrored"` only: split the CPU into this many
            logical devices, one replica each (for testing without GPUs).
        tpu: with `"tpu"` only: the TPU name or `grpc://` address; defaults to
            the `TPU_NAME` environment variable, else `"local"` (Cloud TPU VM).

    Returns:
        A `tf.distribute.Strategy`; `strategy.num_replicas_in_sync` is the
        number of replicas the global batch is split across.

    Raises:
        ValueError: on an unknown `name`, a bad `cpu_devices`, a missing or
            malformed `TF_CONFIG` for `"multiworker"`, or no TPU for `"tpu"`.

    Example:

    >>> from keras_transformer.training.distribute import make_strategy
    >>> strategy = make_strategy("none")
    >>> strategy.num_replicas_in_sync
    1
    """
    check_strategy_options(name, cpu_devices)
    if tpu is not None and name != "tpu":
        raise ValueError(f"tpu={tpu!r} only applies to strategy='tpu'; received {name!r}.")
    if name == "none":
        strategy = tf.distribute.get_strategy()
    elif name == "mirrored":
        devices = configure_cpu_devices(cpu_devices) if cpu_devices else None
        strategy = tf.distribute.MirroredStrategy(devices=devices)
    elif name == "multiworker":
        tf_config = _tf_config()
        strategy = _MultiWorkerMirroredStrategy()
        logger.info(
            "multi-worker: task %s %s of cluster %s",
            tf_config["task"]["type"],
            tf_config["task"]["index"],
            tf_config["cluster"],
        )
    else:
        strategy = _tpu_strategy(tpu)
    logger.info(
        "strategy %s: %d replica(s) in sync", type(strategy).__name__, strategy.num_replicas_in_sync
    )
    return strategy


def _task(strategy: tf.distribute.Strategy) -> tuple[str | None, int | None, dict]:
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None:
        return None, None, {}
    return resolver.task_type, resolver.task_id, resolver.cluster_spec().as_dict()


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes the run directory's files.

    True on one device, under `MirroredStrategy` and `TPUStrategy` (a single
    process), and, under `MultiWorkerMirroredStrategy`, on the task of type
    `"chief"`, or on worker 0 when the cluster has no `"chief"` task.

    Args:
        strategy: the strategy returned by `make_strategy`.

    Returns:
        bool.
    """
    task_type, task_id, cluster = _task(strategy)
    if task_type is None or not cluster:
        return True
    if task_type == "chief":
        return True
    return task_type == "worker" and task_id == 0 and "chief" not in cluster


def write_dir(run_dir: str, strategy: tf.distribute.Strategy) -> str:
    """Where this process writes: `run_dir` on the chief, else a per-worker temporary dir.

    Every worker must run the same code (saving included: evaluation and
    checkpoints can involve collective ops), but only the chief's files are
    kept. A non-chief worker writes under `<run_dir>/workertemp_<task_id>` (the
    `tf.keras` multi-worker convention): the path is the same on every restart,
    so `BackupAndRestore` finds the worker's own backup when a job resumes,
    and the worker deletes it once training has finished.

    Args:
        run_dir: the run directory.
        strategy: the strategy returned by `make_strategy`.

    Returns:
        The directory this process should write to.
    """
    if is_chief(strategy):
        return run_dir
    _, task_id, _ = _task(strategy)
    return os.path.join(run_dir, f"workertemp_{task_id}")


def check_global_batch(batch_size: int, strategy: tf.distribute.Strategy) -> int:
    """The per-replica batch; `ValueError` unless `batch_size` splits evenly.

    `batch_size` is the *global* batch: each step, `strategy` gives every one
    of its `num_replicas_in_sync` replicas `batch_size // num_replicas_in_sync`
    examples.

    Args:
        batch_size: int > 0, the global batch (`--batch-size`).
        strategy: the strategy returned by `make_strategy`.

    Returns:
        The per-replica batch size.

    Raises:
        ValueError: if `batch_size` is not a multiple of the replica count.
    """
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        lower = max(replicas, batch_size // replicas * replicas)
        raise ValueError(
            f"batch_size={batch_size} (the global batch, --batch-size) must be divisible "
            f"by the {replicas} replicas in sync; use e.g. --batch-size {lower} or "
            f"{lower + replicas}."
        )
    return batch_size // replicas


def prepare_for_strategy(model: keras.Model, element_spec: Any) -> keras.Model:
    """Let `model.fit` / `evaluate` build without reducing a distributed batch.

    Works around a defect of Keras 3.15 (TF backend): before each `fit` /
    `evaluate` of a model compiled inside `strategy.scope()`, Keras takes the
    first distributed batch and averages it across the replicas
    (`Trainer._maybe_symbolic_build`) only to read its shapes and dtypes. That
    fails under `MultiWorkerMirroredStrategy` for any batch of more than one
    tensor ("Attempt to convert a value ({'source': PerReplica: ...}) ... to a
    Tensor", keras-team/keras#20585 and #20329), and under `MirroredStrategy`
    when the first batch does not split evenly across the replicas ("Inputs to
    operation AddN ... must have the same size and shape"; evaluation keeps
    partial batches). The model is given the dataset's `element_spec`
    instead, which holds exactly those shapes and dtypes, so no batch is
    reduced. (The other Keras 3.15 defect under multi-worker training, in the
    reduction of the logged metrics, is handled by the strategy that
    `make_strategy("multiworker")` returns.)

    Without a strategy this changes nothing (Keras skips the step), and a
    Keras without this private hook is left alone.

    Args:
        model: a compiled model built inside `strategy.scope()`.
        element_spec: `dataset.element_spec` of the `(inputs, labels)` batches
            that `fit` and `evaluate` receive.

    Returns:
        `model`, for chaining.
    """
    original = getattr(model, "_maybe_symbolic_build", None)
    if original is None:  # a Keras that builds some other way
        return model

    def build(iterator: Any = None, data_batch: Any = None) -> Any:
        return original(data_batch=element_spec if data_batch is None else data_batch)

    model._maybe_symbolic_build = build
    return model
