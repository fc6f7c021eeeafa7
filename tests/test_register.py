"""Loading a run needs only `import keras_transformer`, then `keras.models.load_model(path)`.

`register()` (which the import runs once Keras is imported) must import every module that
registers a Keras object (found here by scanning the package source, so a module added or moved
later cannot be forgotten), and a run of every kind (each architecture, a `--task tsv
--time-budget` run, a pretraining run) and a model a script compiles with the package's
optimizer, loss and metric must load in a fresh process that imported the package and nothing
of it, with Keras imported after it or before it.
"""

import ast
import json
import os
import pathlib
import subprocess
import sys

import pytest

import keras_transformer
from keras_transformer.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "keras_transformer"
TINY = ["--num-layers", "1", "--d-model", "16", "--num-heads", "2", "--dff", "32"]
SMALL_DATA = ["--num-train", "128", "--num-validation", "32", "--num-test", "32"]
RUNS = {
    "encoder-decoder": ["--task", "numbers", *SMALL_DATA, "--max-length", "24"],
    "encoder": ["--task", "it-referent", "--architecture", "encoder", *SMALL_DATA],
    "decoder-only": ["--task", "numbers", "--architecture", "decoder-only", *SMALL_DATA],
    "dual-encoder": ["--task", "numbers", "--architecture", "dual-encoder", *SMALL_DATA],
    "tsv-time-budget": ["--task", "tsv", "--time-budget", "45s", "--batch-size", "16"],
}


def _fresh_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """Runs `code` in a new interpreter that imports this checkout's package."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "3"}
    command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def registering_modules() -> set[str]:
    """Modules of the package whose code calls `register_keras_serializable`."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            name = getattr(node, "attr", None) or getattr(node, "id", None)
            if name == "register_keras_serializable":
                found.add(_module_name(path))
                break
    return found


def test_the_source_scan_finds_the_registering_modules():
    found = registering_modules()
    # modules known to register objects: the scan must see them (else the next test is empty)
    assert {
        "keras_transformer.layers.attention",
        "keras_transformer.training.losses",
        "keras_transformer.training.schedule",
    } <= found
    assert all(name.startswith("keras_transformer.") for name in found)


def test_register_imports_every_module_that_registers_keras_objects():
    code = (
        "import json, sys; import keras_transformer as kt; kt.register(); "
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = _fresh_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = set(json.loads(done.stdout.strip().splitlines()[-1]))
    missing = registering_modules() - imported
    assert not missing, (
        f"kt.register() does not import {sorted(missing)}: add them to "
        "keras_transformer.REGISTERING_MODULES"
    )
    # and nothing listed there is stale (a module moved away)
    for name in keras_transformer.REGISTERING_MODULES:
        assert name in imported


@pytest.fixture(scope="module")
def pairs_tsv(tmp_path_factory):
    """A user's small parallel file (English -> German number words)."""
    from keras_transformer.data import load_task

    task = load_task("numbers", num_train=300, seed=5)
    path = tmp_path_factory.mktemp("tsv") / "pairs.tsv"
    path.write_text("".join(f"{s}\t{t}\n" for s, t in task.train), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, pairs_tsv):
    """Run directories by kind, each trained once (tiny sizes, 1 epoch) on first use."""
    root, done = tmp_path_factory.mktemp("runs"), {}

    def get(kind: str) -> pathlib.Path:
        if kind not in done:
            out = root / kind
            if kind == "pretrain":
                argv = [
                    "pretrain",
                    "--num-sentences",
                    "200",
                    "--epochs",
                    "1",
                    "--finetune-task",
                    "none",
                    *TINY,
                    "--out",
                    str(out),
                ]
            else:
                # one epoch: a budget run is what is tested, not a spent budget (45 s of a
                # machine's time); with --epochs it ends after the epoch, its schedule shaped
                # to the budget all the same
                extra = ["--data", str(pairs_tsv)] if kind == "tsv-time-budget" else []
                extra += ["--epochs", "1"]
                argv = [
                    "train",
                    *RUNS[kind],
                    *extra,
                    *TINY,
                    "--jit-compile",
                    "off",
                    "--out",
                    str(out),
                ]
            assert main(argv) == 0, kind
            done[kind] = out
        return done[kind]

    return get


LOAD = """
import json, sys
import keras_transformer
import keras

model = keras.models.load_model(sys.argv[1], safe_mode=True)
print(json.dumps({"parameters": model.count_params(), "optimizer": type(model.optimizer).__name__,
                  "schedule": type(getattr(model.optimizer, "_learning_rate", None)).__name__}))
"""


@pytest.mark.parametrize("kind", [*RUNS, "pretrain"])
def test_every_kind_of_run_loads_in_a_fresh_process(runs, kind):
    run_dir = runs(kind)
    done = _fresh_python(LOAD, str(run_dir / "model.keras"))
    assert done.returncode == 0, f"{kind}: {done.stderr[-3000:]}"
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    metrics = json.loads((run_dir / "metrics.json").read_text())
    if "parameters" in metrics:  # what the run counted when it trained
        assert loaded["parameters"] == metrics["parameters"], kind
    assert loaded["parameters"] > 0
    if kind == "tsv-time-budget":  # the object register() used to miss
        assert loaded["schedule"] == "BudgetSchedule"


SCRIPT = """
import sys
import numpy as np
import keras
import keras_transformer as kt

model = kt.models.build_transformer(
    40, 40, num_layers=1, d_model=16, num_heads=2, dff=32, dropout=0.1, max_length=12
)
model.compile(
    optimizer=kt.training.make_optimizer(16, warmup_steps=10),
    loss=kt.training.MaskedSparseCategoricalCrossentropy(),
    metrics=[kt.training.MaskedAccuracy()],
)
ids = np.random.default_rng(0).integers(1, 40, (4, 2, 8))
model.fit({"source": ids[0], "target": ids[1]}, ids[2], epochs=1, verbose=0)
model.save(sys.argv[1])
"""


@pytest.fixture(scope="module")
def script_model(tmp_path_factory):
    """The model `SCRIPT` compiles, fits and saves, in a fresh process (made once)."""
    path = str(tmp_path_factory.mktemp("script") / "script.keras")
    done = _fresh_python(SCRIPT, path)
    assert done.returncode == 0, done.stderr[-3000:]
    return path


@pytest.mark.parametrize("first", ["keras_transformer", "keras"])
def test_a_script_compiled_model_loads_after_import_alone(script_model, first):
    second = "keras" if first == "keras_transformer" else "keras_transformer"
    code = LOAD.replace(
        "import keras_transformer\nimport keras\n", f"import {first}\nimport {second}\n"
    )
    assert f"import {first}\nimport {second}" in code
    done = _fresh_python(code, script_model)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded["schedule"] == "TransformerSchedule"
    assert loaded["optimizer"] == "Adam"


def test_import_alone_registers_nothing_before_keras_and_imports_no_tensorflow():
    code = (
        "import sys, keras_transformer; "
        "print(int('tensorflow' in sys.modules), int('keras' in sys.modules), "
        "int('keras_transformer.layers' in sys.modules)); "
        "import keras; print(int('keras_transformer.layers' in sys.modules), "
        "int('keras_transformer.training.schedule' in sys.modules))"
    )
    done = _fresh_python(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", "0", "0", "1", "1"]


def test_a_load_that_misses_a_package_class_names_the_fix(tmp_path, runs):
    """A process that never imported keras_transformer: the package's loaders say what to do."""
    from keras_transformer._registration import missing_class_hint

    code = (
        "import sys, keras\n"
        "try:\n    keras.models.load_model(sys.argv[1], safe_mode=True)\n"
        "except Exception as error:\n    print(repr(str(error)))\n"
    )
    done = _fresh_python(code, str(runs("encoder-decoder") / "model.keras"))
    assert done.returncode == 0, done.stderr[-2000:]
    error = TypeError(eval(done.stdout.strip().splitlines()[-1]))
    hint = missing_class_hint(error)
    assert hint is not None and "import keras_transformer" in hint, str(error)[:500]
    assert missing_class_hint(TypeError("Could not locate class 'Foo'. {'module': 'mine'}")) is None
