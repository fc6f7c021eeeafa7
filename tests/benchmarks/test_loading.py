"""`benchmark` and `compare` load their code from `benchmarks/` (whose docstring examples run
through setup.cfg's testpaths), and say what to do where no clone is installed."""

import pytest

from keras_transformer.cli import main
from keras_transformer.commands import _benchmarks


@pytest.mark.parametrize("name", ["harness", "comparison"])
def test_loads_the_module_of_the_clone(name):
    module = _benchmarks.load(name)
    assert module.__file__ == str(_benchmarks.BENCHMARKS / f"{name}.py") and callable(module.main)


@pytest.mark.parametrize(
    "command", [["compare", "--size", "tiny"], ["benchmark", "--size", "tiny"]]
)
def test_without_a_clone_the_commands_say_how_to_install(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_benchmarks, "BENCHMARKS", tmp_path / "benchmarks")
    monkeypatch.chdir(tmp_path)
    assert main([*command, "--out" if command[0] == "compare" else "--json", "x"]) == 2
    error = capsys.readouterr().err
    assert "benchmarks/" in error and "pip install -e ." in error and "Traceback" not in error
    assert not (tmp_path / "x").exists()
