"""Packaging: Python and Keras bounds, extras, LICENSE, and the private Keras hooks the code uses."""

from __future__ import annotations

import inspect
import pathlib
import re
import subprocess
import sys

import keras
import pytest
from packaging.specifiers import SpecifierSet
from setuptools.config.setupcfg import read_configuration

ROOT = pathlib.Path(__file__).resolve().parent.parent
OPTIONS = read_configuration(str(ROOT / "setup.cfg"))["options"]


def _requirement(requirements: list[str], name: str) -> str:
    found = [r for r in requirements if re.match(rf"{re.escape(name)}(?![-\w\[])", r)]
    assert len(found) == 1, f"{name} not declared once in {requirements}"
    return found[0]


def test_python_requires_matches_what_the_dependencies_install_on():
    # keras 3.15 needs Python >= 3.11; tensorflow 2.21 has no wheels for 3.14.
    spec = SpecifierSet(str(OPTIONS["python_requires"]))
    assert "3.10" not in spec and "3.14" not in spec
    assert all(version in spec for version in ("3.11", "3.12", "3.13"))


def test_setup_script_refuses_an_unsupported_python_before_installing(tmp_path):
    fake = tmp_path / "python3.10"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--version*) echo "Python 3.10.12";; *venv*) touch "$0.venv";; '
        "*) exit 1;; esac\n"
    )
    fake.chmod(0o755)
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "setup.sh")],
        env={"PATH": "/usr/bin:/bin", "PYTHON": str(fake)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "3.11" in result.stderr and "Python 3.10.12" in result.stderr
    assert not (tmp_path / "python3.10.venv").exists()  # stopped before creating anything


def test_keras_is_bounded_above_because_private_hooks_are_used():
    spec = SpecifierSet(_requirement(OPTIONS["install_requires"], "keras")[len("keras") :])
    assert keras.__version__ in spec
    assert "99.0" not in spec, "keras needs an upper bound: the code overrides private hooks"


def test_private_keras_hooks_the_code_relies_on_still_exist(tmp_path):
    """Fails on the Keras release that renames them: then update the code, then the bound."""
    # training/callbacks.py: AtomicBackupAndRestore overrides `_save_model` and
    # reads the paths and counters Keras's restore code uses.
    assert callable(getattr(keras.callbacks.BackupAndRestore, "_save_model", None))
    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    for name in ("_weights_path", "_training_metadata_path", "_current_epoch", "_last_batch_seen"):
        assert hasattr(backup, name), f"keras.callbacks.BackupAndRestore lost {name}"
    assert backup._weights_path.endswith("latest.weights.h5")
    assert "self._save_model()" in inspect.getsource(keras.callbacks.BackupAndRestore)
    # training/devices.py (prepare_for_strategy): replaces `model._maybe_symbolic_build`, which fit/evaluate call.
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    assert callable(getattr(model, "_maybe_symbolic_build", None))
    assert "_maybe_symbolic_build" in inspect.getsource(type(model).fit)


def test_optional_dependencies_are_extras():
    requires = OPTIONS["install_requires"]
    extras = OPTIONS["extras_require"]
    assert not [r for r in requires if r.startswith("tensorflow-datasets")]
    _requirement(extras["ted"], "tensorflow-datasets")
    _requirement(extras["dev"], "tensorflow-datasets")  # the tests use it
    _requirement(extras["dev"], "jax")  # scripts/test.sh reruns the layer tests on JAX
    gpu = _requirement(extras["gpu"], "tensorflow[and-cuda]")
    assert gpu.endswith(_requirement(requires, "tensorflow")[len("tensorflow") :])


def test_ruff_is_pinned_to_one_version():
    ruff = _requirement(OPTIONS["extras_require"]["dev"], "ruff")
    assert re.fullmatch(r"ruff==\d+\.\d+\.\d+", ruff), ruff


def test_license_file_is_the_declared_apache_license():
    metadata = read_configuration(str(ROOT / "setup.cfg"))["metadata"]
    assert metadata["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.parametrize("path", ["exports/", "report/", "runs/"])
def test_gitignore_covers_what_the_readme_commands_write(path):
    assert path in (ROOT / ".gitignore").read_text().split()


def test_running_python_is_supported():
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in SpecifierSet(
        str(OPTIONS["python_requires"])
    )


def test_the_guides_and_the_documentation_url_are_declared_once():
    """setup.py copies `guides.GUIDES` into the wheel; setup.cfg's Documentation URL is
    `guides.DOCS_URL`; MANIFEST.in puts the guides in the sdist."""
    from keras_transformer.guides import DOCS_URL, GUIDES

    metadata = read_configuration(str(ROOT / "setup.cfg"))["metadata"]
    assert metadata["project_urls"]["Documentation"] == DOCS_URL
    import ast

    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    (declared,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "GUIDES"
    ]
    assert declared == GUIDES
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8")
    for name in GUIDES:
        assert (ROOT / "docs" / f"{name}.md").is_file()
        assert f"docs/{name}.md" in manifest
