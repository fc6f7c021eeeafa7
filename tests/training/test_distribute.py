"""tf.distribute on CPU: mirrored == single device, resume, two-worker training, errors.

Strategy runs happen in subprocesses (tests/training/distribute_worker.py):
logical CPU devices and multi-worker collectives must be configured before
TensorFlow initializes, and the pytest process initialized it long ago. Every
subprocess is bounded by a timeout.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.cli import main
from keras_transformer.training import devices
from keras_transformer.training.config import TrainConfig
from tests.helpers import TINY_MODEL_ARGS

HELPER = Path(__file__).with_name("distribute_worker.py")
TIMEOUT = 300  # seconds, per subprocess; a healthy run takes well under a minute

# Single device vs 2 replicas on the same global batch is not bit-exact: each
# replica sums its half of the batch and the all-reduce adds the two partial
# gradients, a different order of float32 additions than one device summing
# the whole batch (and oneDNN kernels may block the work differently for 4
# rows than for 8). Measured: losses equal to 5e-7, weights to 4e-6.
LOSS_RTOL = 1e-5
WEIGHT_ATOL = 1e-4


def _env(**extra: str) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "TF_CONFIG" and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="", NO_PROXY="127.0.0.1,localhost")
    env.update(extra)
    return env


def _last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    result = subprocess.run(
        [sys.executable, str(HELPER), "compare", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
        cwd=out,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return _last_json(result.stdout)


def test_mirrored_on_two_cpus_matches_single_device(compared):
    assert compared["replicas"] == 2
    single, mirrored = compared["single_losses"], compared["mirrored_losses"]
    assert len(mirrored) == 3  # epoch 1: 3 steps of the global batch of 8 (4 per replica)
    np.testing.assert_allclose(mirrored, single[:3], rtol=LOSS_RTOL)


def test_mirrored_resume_continues_where_the_backup_left_off(compared):
    # The fresh model restored weights, optimizer state and epoch: only epoch 2
    # ran, on the learning rate of steps 4-6, and it matches the uninterrupted
    # single-device run.
    assert len(compared["resumed_losses"]) == 3
    assert compared["resumed_iterations"] == 6
    np.testing.assert_allclose(
        compared["resumed_losses"], compared["single_losses"][3:], rtol=LOSS_RTOL
    )


def test_mirrored_weights_match_single_device(compared):
    # The key projection's bias cannot change the output: it adds q . b_k to
    # every score of a query, and softmax ignores a constant shift. Its gradient
    # is pure rounding noise, which Adam (epsilon=1e-9) rescales into full-size
    # steps, so that bias wanders differently in the two runs while the
    # function computed stays the same (the losses above agree).
    differences = compared["weight_differences"]
    key_biases = [path for path in differences if path.endswith("key/bias")]
    assert len(key_biases) == 3  # encoder self, decoder self, decoder cross
    others = {path: d for path, d in differences.items() if path not in key_biases}
    assert max(others.values()) < WEIGHT_ATOL, others


def test_mirrored_evaluate_with_an_uneven_batch(compared):
    # 3 rows over 2 replicas: Keras 3.15 fails here unless prepare_for_strategy is used.
    np.testing.assert_allclose(
        compared["mirrored_evaluate"], compared["single_evaluate"], rtol=LOSS_RTOL
    )


def _free_ports(count: int) -> list[int]:
    """Ports the kernel just handed out; another process may still take one before the
    workers bind it, so `two_workers` starts again on new ports when that happens."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


PORT_TAKEN = re.compile(r"address already in use|failed to bind|could not bind", re.IGNORECASE)
"""What a worker logs when another process took its port between `_free_ports` and bind."""

PORT_ATTEMPTS = 3


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory):
    """Two MultiWorkerMirroredStrategy workers and, beside them, the same run in one
    process without a strategy (the reference); returns (out, [worker 0, worker 1, single])."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        out = tmp_path_factory.mktemp("multiworker")
        results, logs = _start_two_workers(out)
        if results is not None:
            return out, results
        if not PORT_TAKEN.search(logs) or attempt == PORT_ATTEMPTS:
            raise AssertionError(logs)


def _start_two_workers(out):
    """(results, "") when all three runs succeed, else (None, the failing run's log)."""
    cluster = {"worker": [f"127.0.0.1:{port}" for port in _free_ports(2)]}
    runs = []
    for index in range(3):
        if index < 2:
            mode, name = "multiworker", f"worker_{index}"
            task = {"type": "worker", "index": index}
            env = _env(TF_CONFIG=json.dumps({"cluster": cluster, "task": task}))
        else:
            mode, name, env = "single", "single", _env()
        log = open(out / f"{name}.log", "w")  # closed in the finally below
        process = subprocess.Popen(
            [sys.executable, str(HELPER), mode, "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=env,
            cwd=out,
        )
        runs.append((process, log, name))
    try:
        # Poll all three: a worker that could not bind its port exits at once while
        # its peer would wait for it until TIMEOUT.
        deadline = time.monotonic() + TIMEOUT
        while any(process.poll() is None for process, _, _ in runs):
            failed = [name for process, _, name in runs if process.poll() not in (None, 0)]
            if failed:
                return None, (out / f"{failed[0]}.log").read_text()[-3000:]
            assert time.monotonic() < deadline, f"the workers ran past {TIMEOUT} s"
            time.sleep(0.5)
        for process, _, name in runs:  # stdout is one JSON line (verbose=0): no full pipe
            if process.returncode != 0:
                return None, (out / f"{name}.log").read_text()[-3000:]
        results = [_last_json(process.stdout.read()) for process, _, _ in runs]
    finally:
        for process, log, _ in runs:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
    return results, ""


def _read_weights(path) -> dict[str, np.ndarray]:
    arrays = {}
    with h5py.File(path, "r") as handle:
        handle.visititems(
            lambda name, item: (
                arrays.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None
            )
        )
    return arrays


def test_two_workers_end_with_the_same_weights(two_workers):
    _, results = two_workers
    assert [r["status"] for r in results] == [0, 0, 0]
    first, second = (_read_weights(r["weights"]) for r in results[:2])
    assert first and first.keys() == second.keys()
    # Exactly equal: both workers apply the same all-reduced gradients.
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)


def _model_weights(path) -> dict[str, np.ndarray]:
    return {k: v for k, v in _read_weights(path).items() if not k.startswith("optimizer/")}


def _norm(arrays) -> float:
    return float(np.sqrt(sum(np.sum(np.square(a, dtype="float64")) for a in arrays)))


# Two workers against one process on the same global batch of 16, after the 4
# steps of TINY_RUN: the final weights are far closer to each other than to the
# initial weights (measured: distance 0.105 against a movement of 2.73, a ratio
# of 0.039), but not equal element by element (measured up to 0.067). Adam's
# first steps are about lr * sign(gradient) for every element, so an element
# whose gradient is at rounding level (the key biases, ReLU units off for a
# whole batch) takes a full step in either direction. Stated tolerance: ratio 0.1.
MULTIWORKER_RELATIVE_DISTANCE = 0.1


def test_two_workers_trained_like_one_process_on_the_same_global_batch(two_workers):
    out, results = two_workers
    initial = _model_weights(results[0]["initial_weights"])
    final = _model_weights(results[0]["weights"])
    single_initial = _model_weights(results[2]["initial_weights"])
    single = _model_weights(results[2]["weights"])
    assert initial and initial.keys() == final.keys() == single.keys() == single_initial.keys()
    # The same seed gives the same initial weights with and without the strategy ...
    for name in initial:
        np.testing.assert_array_equal(initial[name], single_initial[name], err_msg=name)
    # ... training happened: every weight array moved ...
    unmoved = [name for name in initial if np.array_equal(final[name], initial[name])]
    assert not unmoved
    # ... and it went where the single process went.
    movement = _norm(final[n] - initial[n] for n in final)
    distance = _norm(final[n] - single[n] for n in final)
    assert distance < MULTIWORKER_RELATIVE_DISTANCE * movement, (distance, movement)
    losses = [
        float((out / run / "history.csv").read_text().splitlines()[1].split(",")[1])
        for run in ("run", "single")
    ]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-3)  # measured 5e-5


def test_only_the_chief_writes_the_run_directory(two_workers):
    out, _ = two_workers
    run_dir = out / "run"
    for name in ("model.keras", "metrics.json", "config.json", "checkpoints/best.weights.h5"):
        assert (run_dir / name).is_file(), name
    assert not list(run_dir.glob("workertemp_*"))  # the other worker cleaned up
    history = (run_dir / "history.csv").read_text().strip().splitlines()
    assert len(history) == 1 + 1  # header + 1 epoch: the chief's rows alone
    config = json.loads((run_dir / "config.json").read_text())
    assert config["strategy"] == "multiworker" and config["num_replicas"] == 2


def test_cli_train_mirrored_on_two_cpu_devices_writes_the_run_directory(tmp_path):
    """The real command line, end to end, under MirroredStrategy on 2 logical CPUs."""
    import keras

    from keras_transformer import models  # noqa: F401  (registers the custom layers)

    tiny = [
        "--task",
        "numbers",
        "--num-train",
        "64",
        "--num-validation",
        "8",
        "--num-test",
        "4",
        *TINY_MODEL_ARGS,
        "--batch-size",
        "16",
        "--max-length",
        "24",
        "--warmup-steps",
        "10",
        "--vocab-size",
        "200",
        "--epochs",
        "2",
    ]
    run_dir = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", "train", *tiny]
        + ["--strategy", "mirrored", "--cpu-devices", "2", "--out", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    history = (run_dir / "history.csv").read_text().strip().splitlines()
    assert len(history) == 1 + 2  # header + one row per epoch
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["epochs_run"] == 2
    config = json.loads((run_dir / "config.json").read_text())
    assert config["strategy"] == "mirrored" and config["num_replicas"] == 2
    model = keras.saving.load_model(run_dir / "model.keras", safe_mode=True)
    assert sorted(model.input) == ["source", "target"]


def test_tpu_without_a_tpu_is_a_one_line_error(tmp_path):
    env = _env()
    env.pop("TPU_NAME", None)
    result = subprocess.run(
        [sys.executable, "-m", "keras_transformer.cli", "train", "--strategy", "tpu"]
        + ["--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    error = [
        line for line in result.stderr.splitlines() if "keras-transformer train: error" in line
    ]
    assert len(error) == 1 and "strategy='tpu' found no TPU" in error[0] and "TPU_NAME" in error[0]


# In-process: argument checks that fail before TensorFlow is touched.


def test_cpu_devices_needs_mirrored():
    with pytest.raises(ValueError, match=r"--cpu-devices.*--strategy mirrored --cpu-devices 2"):
        TrainConfig(cpu_devices=2)
    with pytest.raises(ValueError, match="strategy='multiworker'"):
        TrainConfig(strategy="multiworker", cpu_devices=2)
    for bad, error in ((0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(error, match=r"cpu_devices must be a.* integer; .*--cpu-devices 2"):
            TrainConfig(strategy="mirrored", cpu_devices=bad)
    with pytest.raises(ValueError, match="strategy='gpus' is not supported"):
        TrainConfig(strategy="gpus")
    assert TrainConfig().strategy == "none" and TrainConfig().cpu_devices is None


def test_cli_rejects_bad_strategy_flags(tmp_path, capsys):
    assert main(["train", "--cpu-devices", "2", "--out", str(tmp_path)]) == 2
    assert "--strategy mirrored --cpu-devices 2" in capsys.readouterr().err
    assert main(["train", "--strategy", "mirrored", "--cpu-devices", "0"]) == 2
    assert "cpu_devices=0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["train", "--strategy", "gpus"])
    assert "invalid choice: 'gpus'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "value, message",
    [
        (None, "needs the TF_CONFIG environment variable"),
        ("{not json", "TF_CONFIG is not valid JSON"),
        ('{"cluster": {"worker": ["127.0.0.1:1"]}}', "must hold 'cluster' and 'task'"),
    ],
)
def test_multiworker_without_usable_tf_config(monkeypatch, value, message):
    if value is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", value)
    with pytest.raises(ValueError, match=message) as error:
        devices.make_strategy("multiworker")
    assert '"task": {"type": "worker", "index": 0}' in str(error.value)  # the fix, shown


def test_make_strategy_argument_errors():
    with pytest.raises(ValueError, match="only applies to strategy='mirrored'"):
        devices.make_strategy("none", cpu_devices=2)
    with pytest.raises(ValueError, match="tpu='my-tpu' only applies to strategy='tpu'"):
        devices.make_strategy("mirrored", tpu="my-tpu")
    strategy = devices.make_strategy("none")
    assert strategy is tf.distribute.get_strategy() and strategy.num_replicas_in_sync == 1


def test_global_batch_splits_evenly():
    four = SimpleNamespace(num_replicas_in_sync=4)
    assert devices.check_global_batch(64, four) == 16
    with pytest.raises(ValueError, match=r"batch_size=30 .* 4 replicas .*--batch-size 28 or 32"):
        devices.check_global_batch(30, four)


def _worker(task_type: str, task_id: int, cluster: dict) -> SimpleNamespace:
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type=task_type, task_id=task_id
    )
    return SimpleNamespace(cluster_resolver=resolver, num_replicas_in_sync=2)


def test_chief_and_write_dir():
    workers = {"worker": ["a:1", "b:1"]}
    with_chief = {"chief": ["c:1"], "worker": ["a:1"]}
    single = tf.distribute.get_strategy()
    assert devices.is_chief(single) and devices.write_dir("run", single) == "run"
    assert devices.is_chief(_worker("worker", 0, workers))
    assert not devices.is_chief(_worker("worker", 1, workers))
    assert devices.is_chief(_worker("chief", 0, with_chief))
    assert not devices.is_chief(_worker("worker", 0, with_chief))
    assert devices.write_dir("run", _worker("worker", 0, workers)) == "run"
    assert devices.write_dir("run", _worker("worker", 1, workers)) == os.path.join(
        "run", "workertemp_1"
    )
