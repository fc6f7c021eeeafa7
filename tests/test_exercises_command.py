"""`keras-transformer exercises --out DIR`: the student versions of the tutorials."""

import ast
import json
import os
import pathlib
import subprocess
import sys

import pytest

from keras_transformer import cli
from keras_transformer.course.notebooks import (
    CHECKER_TAG,
    EXERCISE_TAG,
    student_version,
    tutorials_dir,
    write_student_notebooks,
)

DEFAULT_TUTORIALS = tutorials_dir()


def _cells(path, tag):
    notebook = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    return [
        "".join(cell["source"])
        for cell in notebook["cells"]
        if cell["cell_type"] == "code" and tag in cell.get("metadata", {}).get("tags", [])
    ]


def _functions(source):
    """{qualified name: function node} of the top-level functions and methods."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def _raises_not_implemented(function):
    body = function.body
    if ast.get_docstring(function) is not None:
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and isinstance(body[0].exc, ast.Call)
        and getattr(body[0].exc.func, "id", None) == "NotImplementedError"
    )


def test_command_writes_student_notebooks(tmp_path, capsys):
    out = tmp_path / "students"
    assert cli.main(["exercises", "--out", str(out)]) == 0
    written = sorted(out.glob("*.ipynb"))
    assert len(written) >= 6, [p.name for p in written]
    assert str(len(written)) in capsys.readouterr().out
    for student in written:
        solution = DEFAULT_TUTORIALS / student.name
        solved, stubbed = _cells(solution, EXERCISE_TAG), _cells(student, EXERCISE_TAG)
        assert solved and len(solved) == len(stubbed)
        for solution_source, student_source in zip(solved, stubbed, strict=True):
            assert student_source != solution_source
            mine, theirs = _functions(solution_source), _functions(student_source)
            assert mine.keys() == theirs.keys() and mine
            for name, function in theirs.items():
                assert _raises_not_implemented(function), f"{student.name}: {name}"
                solution_function = mine[name]
                assert ast.dump(function.args) == ast.dump(solution_function.args), name
                assert ast.get_docstring(function) == ast.get_docstring(solution_function), name
        # the checker cells stay, word for word, and every exercise has one
        checkers = _cells(solution, CHECKER_TAG)
        assert checkers and _cells(student, CHECKER_TAG) == checkers
        notebook = json.loads(student.read_text(encoding="utf-8"))
        assert all(
            cell.get("outputs", []) == []
            for cell in notebook["cells"]
            if cell["cell_type"] == "code"
        )


def test_solution_notebooks_hold_the_checkers():
    names = {
        "check_scaled_dot_product_attention",
        "check_positional_encoding",
        "check_multi_head_attention",
        "check_add_norm",
        "check_feed_forward",
        "check_encoder_layer",
        "check_decoder_layer",
        "check_masked_loss",
        "check_functional_transformer",
        "check_wordpiece",
        "check_pre_ln_encoder_layer",
        "check_perplexity",
        "check_greedy_search",
        "check_beam_search",
        "check_corpus_bleu",
    }
    used = set()
    for path in sorted(DEFAULT_TUTORIALS.glob("[0-9][0-9]_*.ipynb")):
        for source in _cells(path, CHECKER_TAG):
            used |= {name for name in names if f"kt.exercises.{name}(" in source}
    assert used == names


def test_student_version_keeps_signatures_and_other_statements():
    source = 'import numpy as np\n\nSCALE = 2\n\n\ndef f(x, *, y=1):\n    """Doc."""\n    z = x\n    return z * y\n'
    stub = student_version(source)
    assert "SCALE = 2" in stub and "import numpy as np" in stub
    assert _raises_not_implemented(_functions(stub)["f"])
    assert "return" not in stub


def test_student_version_rejects_cells_without_functions():
    with pytest.raises(ValueError, match="defines no function or class"):
        student_version("x = 1\n")


def test_missing_tutorials_is_a_one_line_error(tmp_path, capsys):
    status = cli.main(
        ["exercises", "--out", str(tmp_path / "o"), "--tutorials", str(tmp_path / "no")]
    )
    assert status == 2
    err = capsys.readouterr().err
    assert "--tutorials" in err and len(err.strip().splitlines()) == 1


def test_no_exercise_cells_is_an_error(tmp_path):
    folder = tmp_path / "tutorials"
    folder.mkdir()
    (folder / "01_x.ipynb").write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    assert write_student_notebooks(folder, tmp_path / "out") == []
    assert cli.main(["exercises", "--out", str(tmp_path / "out"), "--tutorials", str(folder)]) == 2


def test_the_output_folder_gets_a_readme_pointing_at_the_solutions(tmp_path):
    out = tmp_path / "students"
    assert cli.main(["exercises", "--out", str(out)]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert str(DEFAULT_TUTORIALS.resolve()) in readme  # where the answers are
    assert "jupyter lab" in readme and "kt.exercises.check_" in readme
    for notebook in out.glob("*.ipynb"):
        assert f"`{notebook.name}`" in readme


def test_the_command_imports_no_tensorflow(tmp_path):
    code = (
        "import sys; from keras_transformer.cli import main; "
        f"assert main(['exercises', '--out', {str(tmp_path / 'o')!r}]) == 0; "
        "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'imported'"
    )
    root = pathlib.Path(__file__).resolve().parent.parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
