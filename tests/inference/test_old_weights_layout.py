"""A run saved by keras_transformer 0.1 (the old weight layout) fails in one line that says so."""

import json
import shutil
import subprocess
import sys
import zipfile

import keras
import pytest

import keras_transformer as kt
from keras_transformer.errors import OldWeightsLayoutError
from keras_transformer.inference import Translator


def as_saved_by_version_0_1(run_dir, old_dir):
    """A copy of `run_dir` whose model.keras lacks `weights_layout`, as 0.1 saved every layer."""
    shutil.copytree(run_dir, old_dir)
    path = old_dir / "model.keras"
    with zipfile.ZipFile(run_dir / "model.keras") as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    text = members["config.json"].decode()
    assert '"weights_layout": 2' in text  # what 0.2 writes
    members["config.json"] = text.replace(', "weights_layout": 2', "").encode()
    assert b"weights_layout" not in members["config.json"]
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return old_dir


@pytest.fixture(scope="module")
def old_run(tiny_run, tmp_path_factory):
    return as_saved_by_version_0_1(tiny_run, tmp_path_factory.mktemp("old") / "run")


def test_keras_load_model_names_the_version_and_the_fix(old_run):
    kt.register()
    with pytest.raises(OldWeightsLayoutError) as error:
        keras.models.load_model(old_run / "model.keras", safe_mode=True)
    message = str(error.value)
    assert "\n" not in message
    assert "keras_transformer 0.1" in message and "Train it again" in message


def test_the_new_layout_loads(tiny_run):
    assert Translator.from_run_dir(tiny_run) is not None


def test_translator_and_the_command_say_it_in_one_line(old_run):
    with pytest.raises(OldWeightsLayoutError, match=r"model\.keras: this model was saved by"):
        Translator.from_run_dir(old_run)
    (old_run / "config.json").write_text(json.dumps({"max_length": 12}))
    result = subprocess.run(
        [sys.executable, "-m", "keras_transformer", "translate", str(old_run), "one"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "keras_transformer 0.1" in lines[0], result.stderr
