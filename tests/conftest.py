"""Shared test settings: quiet TensorFlow, deterministic seeds, tiny sizes.

The layer and model tests also run under `KERAS_BACKEND=jax` (and torch), where TensorFlow
may not even be installed: nothing here imports it at collection time, and a test that needs
TensorFlow carries `@pytest.mark.requires_tensorflow("why")`, which skips it on another
backend with that reason.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import json  # noqa: E402

import keras  # noqa: E402
import pytest  # noqa: E402

from keras_transformer.models import build_transformer  # noqa: E402
from tests.helpers import TINY_MAX_LENGTH, TINY_SOURCES, TINY_TARGETS  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "requires_tensorflow(reason): needs the TensorFlow backend or TensorFlow itself; "
        "skipped, with the reason, when KERAS_BACKEND is another backend",
    )
    config.addinivalue_line(
        "markers",
        "backend_smoke: run again on JAX by scripts/test.sh (every test under tests/layers has "
        "it; model tests carry it by hand)",
    )

    if keras.backend.backend() == "torch":
        _let_numpy_read_torch_tensors()


def _let_numpy_read_torch_tensors():
    """`np.asarray(t)` of a torch tensor that requires grad (any layer output computed from
    weights) raises "Can't call numpy() on Tensor that requires grad". The tests compare outputs
    with NumPy (`np.asarray`, `np.testing.assert_allclose`, `numpy_array + tensor`) on every
    backend, so under the torch backend the tests read tensors detached and on the CPU, the way
    `keras.ops.convert_to_numpy` does. Test-session only: the package never relies on it."""
    import torch

    def detached_array(self, dtype=None, copy=None):
        array = self.detach().cpu().numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    torch.Tensor.__array__ = detached_array


LAYER_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers") + os.sep


def pytest_collection_modifyitems(config, items):
    for item in items:
        if str(item.path).startswith(LAYER_TESTS):
            item.add_marker(pytest.mark.backend_smoke)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        return
    for item in items:
        marker = item.get_closest_marker("requires_tensorflow")
        if marker is not None:
            why = marker.args[0] if marker.args else marker.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"needs TensorFlow ({backend}): {why}"))


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    from keras_transformer.data import WordPieceTokenizer  # TensorFlow: imported on use

    run_dir = tmp_path_factory.mktemp("tiny_run")
    source = WordPieceTokenizer.learn(TINY_SOURCES, vocab_size=60)
    target = WordPieceTokenizer.learn(TINY_TARGETS, vocab_size=60)
    source.save(run_dir / "tokenizers" / "source")
    target.save(run_dir / "tokenizers" / "target")
    model = build_transformer(
        source.vocab_size,
        target.vocab_size,
        num_layers=2,
        d_model=16,
        num_heads=2,
        dff=32,
        max_length=TINY_MAX_LENGTH,
    )
    model.save(run_dir / "model.keras")
    (run_dir / "config.json").write_text(json.dumps({"max_length": TINY_MAX_LENGTH}))
    return run_dir
