"""Every command runs from a wheel installed in a fresh virtual environment outside the clone.

The wheel is built from a copy of the sources (so the build writes nothing into the checkout),
installed with `--no-deps` into a new venv in a temporary folder, and the dependencies
(TensorFlow, Keras, ...) are borrowed from the development environment through a `.pth` file
naming its site-packages. `.pth` files inside that folder are not processed, so the development
environment's editable `keras_transformer` stays invisible: the test checks that the package
imported is the installed wheel's. Every command runs with its working directory outside the
clone and without PYTHONPATH.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig

import pytest

from keras_transformer.guides import DOCS_URL, GUIDES

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ("setup.py", "setup.cfg", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE")
TINY = ["--num-layers", "1", "--d-model", "16", "--num-heads", "2", "--dff", "32"]


def _run(command, *, cwd, env=None, timeout=300) -> subprocess.CompletedProcess:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{command}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(keras-transformer script, venv python, working directory, environment) of the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    for name in SOURCES:
        shutil.copy2(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("keras_transformer", "tutorials"):
        shutil.copytree(ROOT / folder, source / folder, ignore=ignore)
    (source / "docs").mkdir()
    for name in GUIDES:  # the guides the build copies into the package (setup.py)
        shutil.copy2(ROOT / "docs" / f"{name}.md", source / "docs" / f"{name}.md")
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip"]
    _run(
        [*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), "."], cwd=source
    )
    (wheel,) = dist.glob("keras_transformer-*.whl")

    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
    python = venv / "bin" / "python"
    _run(
        [*pip, "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        cwd=tmp,
    )
    site = _run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp
    ).stdout.strip()
    dev_site = sysconfig.get_paths()["purelib"]  # this interpreter's: TensorFlow, Keras, ...
    pathlib.Path(site, "_dev_dependencies.pth").write_text(dev_site + "\n")

    work = tmp / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", MPLBACKEND="Agg")
    return venv / "bin" / "keras-transformer", python, work, env


def test_the_package_imported_is_the_installed_wheel(installed):
    script, python, work, env = installed
    code = (
        "import json, keras_transformer as kt; from keras_transformer.course import notebooks; "
        "print(json.dumps([kt.__file__, str(notebooks.tutorials_dir())]))"
    )
    done = _run([str(python), "-c", code], cwd=work, env=env)
    package, tutorials = map(pathlib.Path, json.loads(done.stdout))
    venv = python.parent.parent
    assert package.is_relative_to(venv), package  # not the clone's editable install
    assert tutorials.is_relative_to(venv), tutorials  # the notebooks shipped in the wheel
    assert len(list(tutorials.glob("[0-9][0-9]_*.ipynb"))) == len(
        list((ROOT / "tutorials").glob("[0-9][0-9]_*.ipynb"))
    )


def test_compare_writes_its_report(installed):
    script, _, work, env = installed
    _run([str(script), "compare", "--size", "tiny", "--out", "comparison"], cwd=work, env=env)
    assert (work / "comparison" / "comparison.md").read_text().startswith("# Transformers")
    assert len(list((work / "comparison" / "plots").glob("*.png"))) == 5


def test_exercises_writes_the_student_notebooks_and_a_readme(installed):
    script, python, work, env = installed
    _run([str(script), "exercises", "--out", "students"], cwd=work, env=env)
    notebooks = sorted((work / "students").glob("*.ipynb"))
    assert len(notebooks) >= 6
    cells = json.loads(notebooks[0].read_text())["cells"]
    assert 'raise NotImplementedError("exercise: write' in "".join(
        "".join(cell["source"]) for cell in cells
    )
    readme = (work / "students" / "README.md").read_text()
    assert str(python.parent.parent) in readme  # the solutions: installed with the wheel


def test_exercises_writes_the_nbgrader_course(installed):
    """The graded assignment that is no tutorial ships in the wheel (package data)."""
    script, _, work, env = installed
    _run([str(script), "exercises", "--nbgrader", "course"], cwd=work, env=env)
    assert (work / "course" / "nbgrader_config.py").is_file()
    fit = work / "course" / "source" / "fit_a_transformer" / "fit_a_transformer.ipynb"
    cells = json.loads(fit.read_text())["cells"]
    assert any(cell["metadata"]["nbgrader"]["grade"] for cell in cells)
    assert (work / "course" / "source" / "01_attention_from_scratch").is_dir()


def test_benchmark_runs(installed):
    script, _, work, env = installed
    assert "--size" in _run([str(script), "benchmark", "--help"], cwd=work, env=env).stdout
    argv = ["benchmark", "--size", "tiny", "--models", "ours", "--repeats", "1"]
    assert "| ours no-xla fp32 |" in _run([str(script), *argv], cwd=work, env=env).stdout


def test_train_translate_export(installed):
    script, _, work, env = installed
    assert "--num-sentences" in _run([str(script), "pretrain", "--help"], cwd=work, env=env).stdout
    train = [
        "train",
        "--epochs",
        "1",
        "--num-train",
        "200",
        "--num-validation",
        "50",
        "--num-test",
        "50",
        *TINY,
        "--jit-compile",
        "off",
        "--out",
        "run",
    ]
    _run([str(script), *train], cwd=work, env=env)
    assert (work / "run" / "model.keras").is_file()
    translated = _run([str(script), "translate", "run", "five"], cwd=work, env=env).stdout
    assert len(translated.splitlines()) == 1
    exported = _run([str(script), "export", "run", "--out", "exported"], cwd=work, env=env)
    assert (work / "exported" / "1" / "saved_model.pb").is_file()
    # the pointer it prints leads to a file of the installed package
    guide = pathlib.Path(exported.stdout.split("The serving guide: ", 1)[1].split()[0])
    assert guide.is_file() and "TensorFlow Serving" in guide.read_text(encoding="utf-8")
    assert ROOT not in guide.parents
    _run([str(script), "attention", "run", "five", "--out", "five.html"], cwd=work, env=env)
    assert "five" in (work / "five.html").read_text(encoding="utf-8")


def test_the_guides_and_the_documentation_url_come_with_the_wheel(installed):
    script, python, work, env = installed
    for name in GUIDES:
        printed = _run([str(python), "-m", "keras_transformer.guides", name], cwd=work, env=env)
        assert printed.stdout == (ROOT / "docs" / f"{name}.md").read_text(encoding="utf-8")
    helped = _run([str(script), "train", "--help"], cwd=work, env=env).stdout
    assert "python -m keras_transformer.guides scaling" in " ".join(helped.split())
    code = "import importlib.metadata as m; print(m.metadata('keras_transformer').get_all('Project-URL'))"
    urls = _run([str(python), "-c", code], cwd=work, env=env).stdout
    assert f"Documentation, {DOCS_URL}" in urls


def test_every_command_of_the_installed_help_is_exercised(installed):
    script, _, work, env = installed
    help_text = _run([str(script), "--help"], cwd=work, env=env).stdout
    commands = help_text[help_text.index("\ncommands:") :].splitlines()[2:]
    listed = [line.split()[0] for line in commands if line.startswith("    ") and line[4] != " "]
    exercised = {
        "train",
        "pretrain",
        "translate",
        "export",
        "attention",
        "compare",
        "benchmark",
        "exercises",
    }
    assert set(listed) == exercised, "a new command: run it from the wheel in this file"


def test_no_module_reads_the_clone_at_run_time():
    """No `sys.path` edits; the only path above the package is the editable-install fallback."""
    for path in (ROOT / "keras_transformer").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "sys.path" not in text, path
        if "parents[" in text:
            assert path.relative_to(ROOT).as_posix() == "keras_transformer/course/notebooks.py"
