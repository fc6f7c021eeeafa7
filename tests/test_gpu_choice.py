"""What `train` picks on a GPU (`--jit-compile auto`, `--mixed-precision auto`), with faked devices.

The suite runs on CPUs; these tests replace TensorFlow's device listing so the
GPU branch of the decision documented in the README ("Install on a GPU") is
checked too.
"""

from __future__ import annotations

import pytest
import tensorflow as tf

from keras_transformer.training.devices import resolve_precision, use_xla


@pytest.fixture()
def gpus(monkeypatch):
    """Pretend these GPUs (compute capabilities) are present."""

    def install(*capabilities):
        devices = [
            tf.config.PhysicalDevice(name=f"/physical_device:GPU:{i}", device_type="GPU")
            for i in range(len(capabilities))
        ]
        details = {
            device.name: {"compute_capability": cc}
            for device, cc in zip(devices, capabilities, strict=True)
        }
        listing = tf.config.list_physical_devices

        def list_devices(device_type=None):
            return devices if device_type == "GPU" else listing(device_type)

        monkeypatch.setattr(tf.config, "list_physical_devices", list_devices)
        monkeypatch.setattr(
            tf.config.experimental, "get_device_details", lambda device: details[device.name]
        )

    return install


@pytest.mark.parametrize(
    "capabilities, precision",
    [
        (((9, 0),), "bf16"),  # H100
        (((8, 0),), "bf16"),  # A100
        (((7, 5),), "fp16"),  # T4: tensor cores, no bfloat16
        (((7, 0), (8, 6)), "fp16"),  # mixed cards: the oldest decides
        (((6, 1),), None),  # no tensor cores: float32
    ],
)
def test_auto_on_a_gpu_picks_xla_and_the_precision_of_its_tensor_cores(
    gpus, capabilities, precision
):
    gpus(*capabilities)
    assert use_xla("auto") is True
    assert resolve_precision("auto") == precision
    assert use_xla("off") is False and resolve_precision("none") is None  # explicit wins


def test_auto_on_a_cpu_keeps_float32_without_xla(gpus):
    gpus()
    assert use_xla("auto") is False and resolve_precision("auto") is None
