"""`keras-transformer exercises --nbgrader DIR`: the course as nbgrader assignments.

The conversion is checked on every notebook (no nbgrader needed). Then the real nbgrader runs
the round trip a teacher runs, offline, on a small subset (`KERAS_TRANSFORMER_GRADE_ALL=1`:
the whole course, about 12 minutes of CPU, docs/teaching.md): `generate_assignment`, submissions placed in `submitted/<student>/`,
`autograde`, `generate_feedback`. The reference answers score full marks; each wrong submission
loses exactly the points of the checker cell that fails, and its feedback shows the checker's
one-line message, not a traceback.
"""

import json
import linecache
import os
import pathlib
import re
import resource
import subprocess
import sys
import time

import pytest

from keras_transformer import cli
from keras_transformer.course import nbgrader_course
from keras_transformer.course.checking import CheckFailed, graded
from keras_transformer.course.notebooks import (
    CHECKER_TAG,
    EXERCISE_TAG,
    exercise_bodies,
    tutorial_notebooks,
)

ROOT = pathlib.Path(__file__).resolve().parent.parent
MARKERS = (nbgrader_course.BEGIN_SOLUTION, nbgrader_course.END_SOLUTION)


def _cells(path):
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["cells"]


def _tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def _source(cell):
    return "".join(cell["source"])


def _without_markers(source):
    return "".join(line for line in source.splitlines(keepends=True) if line.strip() not in MARKERS)


def _has(path, tag):
    return any(c["cell_type"] == "code" and tag in _tags(c) for c in _cells(path))


# The conversion, on every notebook of the course.


def test_one_assignment_per_notebook_with_exercises(tmp_path, capsys):
    assert cli.main(["exercises", "--nbgrader", str(tmp_path)]) == 0
    expected = [p.stem for p in tutorial_notebooks() if _has(p, EXERCISE_TAG)]
    expected.append("fit_a_transformer")
    found = sorted(p.name for p in (tmp_path / "source").iterdir())
    assert found == sorted(expected)
    out = capsys.readouterr().out
    assert all(name in out for name in expected) and "points" in out
    config = (tmp_path / "nbgrader_config.py").read_text()
    assert "c.Execute.timeout" in config and "capture_fd_output=False" in config
    compile(config, "nbgrader_config.py", "exec")


@pytest.mark.parametrize(
    "path",
    [
        *(p for p in tutorial_notebooks() if _has(p, EXERCISE_TAG)),
        *sorted(nbgrader_course.graded_assignments_dir().glob("*.ipynb")),
    ],
    ids=lambda p: p.stem,
)
def test_cells_become_answers_tests_and_read_only_cells(path):
    notebook, total = nbgrader_course.nbgrader_notebook(path)
    original = _cells(path)
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in notebook["cells"]]
    assert len(ids) == len(set(ids)) and all(re.fullmatch(r"[\w-]+", i) for i in ids)
    points = 0
    for before, cell in zip(original, notebook["cells"], strict=True):
        meta, source = cell["metadata"]["nbgrader"], _source(cell)
        assert meta["schema_version"] == 3
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
        if EXERCISE_TAG in _tags(before) and cell["cell_type"] == "code":
            assert meta["solution"] and not meta["grade"] and not meta["locked"]
            # every body between the markers, the answer itself unchanged
            assert _without_markers(source) == _source(before).rstrip("\n") + "\n"
            bodies = [b for b in exercise_bodies(_source(before)) if b.start < b.end]
            assert source.count(MARKERS[0]) == source.count(MARKERS[1]) == len(bodies)
        elif CHECKER_TAG in _tags(before) and cell["cell_type"] == "code":
            assert meta["grade"] and meta["locked"] and not meta["solution"]
            assert meta["points"] > 0
            points += meta["points"]
            assert source.startswith("with kt.exercises.graded():")
            assert "\n".join(line[4:] for line in source.splitlines()[1:]).strip() == (
                _source(before).strip()
            )
        else:
            assert meta["locked"] and not meta["grade"] and not meta["solution"]
            assert source == _source(before)
    assert total == points > 0


def test_any_tagged_notebook_becomes_an_assignment(tmp_path):
    """Nothing is listed by hand: a new notebook with tagged cells is taken in as it is."""
    folder = tmp_path / "tutorials"
    folder.mkdir()

    def code(source, tags=(), **meta):
        metadata = {"tags": list(tags)}
        if meta:
            metadata["keras_transformer"] = meta
        return {
            "cell_type": "code",
            "metadata": metadata,
            "source": source,
            "outputs": [],
            "execution_count": None,
        }

    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# 13 · new"},
        code("import keras_transformer as kt\n"),
        code("def f(x):\n    return x\n\n\ndef g(x):\n    return -x\n", ["exercise"]),
        code("kt.exercises.check_f(f)\nkt.exercises.check_g(g)\n", ["checker"], points=4),
        code("kt.exercises.check_f(f)\n", ["checker"]),
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "13_new.ipynb").write_text(json.dumps(notebook))
    (folder / "14_no_exercise.ipynb").write_text(json.dumps({**notebook, "cells": cells[:2]}))
    assignments = nbgrader_course.write_course(folder, tmp_path / "course")
    assert assignments == {"13_new": 14, "fit_a_transformer": 20}
    written = _cells(tmp_path / "course" / "source" / "13_new" / "13_new.ipynb")
    ids = [c["metadata"]["nbgrader"]["grade_id"] for c in written]
    assert ids == ["cell_00", "cell_01", "answer_f", "check_f", "check_f_2"]
    assert _source(written[2]).count(MARKERS[0]) == 2


def test_checker_cells_without_the_package_import_are_refused(tmp_path):
    cells = [
        {"cell_type": "code", "metadata": {"tags": ["exercise"]}, "source": "def f():\n  pass\n"},
        {"cell_type": "code", "metadata": {"tags": ["checker"]}, "source": "assert f() is None"},
    ]
    path = tmp_path / "01_x.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    with pytest.raises(ValueError, match="import keras_transformer as kt"):
        nbgrader_course.nbgrader_notebook(path)


def test_tutorials_without_exercises_is_a_one_line_error(tmp_path, capsys):
    argv = ["exercises", "--tutorials", str(tmp_path), "--nbgrader", str(tmp_path / "course")]
    assert cli.main(argv) == cli.EXIT_USER_ERROR
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "has a cell tagged 'exercise'" in err, err
    assert not (tmp_path / "course").exists()


def test_out_and_nbgrader_are_alternatives(tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["exercises", "--out", str(tmp_path / "a"), "--nbgrader", str(tmp_path / "b")])
    assert "not allowed with" in capsys.readouterr().err


def test_graded_shows_a_failure_as_one_line():
    with pytest.raises(CheckFailed) as caught, graded():
        raise AssertionError("attention_numpy: the weights do not sum to 1\nre-read 3.2.1")
    assert caught.value._render_traceback_() == [
        "Check failed: attention_numpy: the weights do not sum to 1 re-read 3.2.1"
    ]
    with pytest.raises(CheckFailed, match="ZeroDivisionError: division by zero"), graded():
        print(1 / 0)
    # a bare `assert` of a cell (IPython keeps the cells' lines in linecache, as here)
    cell = "assert 1 + 1 == 3\n"
    linecache.cache["<cell-1>"] = (len(cell), None, [cell], "<cell-1>")
    with pytest.raises(CheckFailed, match=r"^assert 1 \+ 1 == 3$"), graded():
        exec(compile(cell, "<cell-1>", "exec"))


def test_graded_shows_warnings_on_stdout(capsys):
    with graded():
        print("a warning", file=sys.stderr)
    captured = capsys.readouterr()
    assert captured.out == "a warning\n" and captured.err == ""


# The round trip with the real nbgrader, offline, on a subset.

# (assignment, student, {answer grade id: [(text of the reference answer, its replacement)]},
#  the checker cell expected to fail (None: full marks), words of its message)
# Graded by default (this file: 158 s of CPU, measured on a shared 2-core machine): a cheap assignment wrong, one
# wrong answer among three graded cells (the other two keep their points), and the model.fit
# assignment's reference (full marks).
SUBMISSIONS = [
    (
        "01_attention_from_scratch",
        "unscaled",
        {"answer_attention_numpy": [(" / np.sqrt(d_k)", "")]},
        "check_scaled_dot_product_attention",
        "sqrt(d_k)",
    ),
    (
        "04_add_norm_feed_forward_encoder_layer",
        "no_relu",
        {
            "answer_MyFeedForward": [
                ('keras.layers.Dense(dff, activation="relu")', "keras.layers.Dense(dff)")
            ]
        },
        "check_feed_forward",
        "ReLU",
    ),
    ("fit_a_transformer", "reference", {}, None, None),
]
# KERAS_TRANSFORMER_GRADE_ALL=1 also grades these, and the reference answers of every other
# assignment: the whole course (docs/teaching.md says how long it takes).
MORE_SUBMISSIONS = [
    ("01_attention_from_scratch", "reference", {}, None, None),
    (
        "01_attention_from_scratch",
        "unwritten",
        {"answer_attention_numpy": [("d_k = q.shape[-1]", "raise NotImplementedError()")]},
        "check_scaled_dot_product_attention",
        "not implemented yet",
    ),
    ("04_add_norm_feed_forward_encoder_layer", "reference", {}, None, None),
    (
        "fit_a_transformer",
        "no_padding_mask",
        {
            "answer_build_model": [
                ("(x, padding_mask=source_mask)", "(x)"),
                (", context_padding_mask=source_mask", ""),
            ]
        },
        "check_trained_translator",
        "padding",
    ),
]
if os.environ.get("KERAS_TRANSFORMER_GRADE_ALL") == "1":
    SUBMISSIONS += MORE_SUBMISSIONS
    SUBMISSIONS += [
        (path.stem, "reference", {}, None, None)
        for path in tutorial_notebooks()
        if _has(path, EXERCISE_TAG) and path.stem not in {s[0] for s in SUBMISSIONS}
    ]


def _cpu_seconds():
    """User + system seconds of the finished child processes (nbgrader and its kernels)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _nbgrader(course, env, *args):
    """Runs `nbgrader ARGS` in `course`; returns (wall seconds, CPU seconds)."""
    start, cpu = time.perf_counter(), _cpu_seconds()
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,  # 06 took 639 s on a loaded 2-core machine
    )
    assert done.returncode == 0, (args, done.stdout[-3000:], done.stderr[-3000:])
    return time.perf_counter() - start, _cpu_seconds() - cpu


def _answers(source_notebook):
    return {
        c["metadata"]["nbgrader"]["grade_id"]: _without_markers(_source(c))
        for c in _cells(source_notebook)
        if c["metadata"]["nbgrader"]["solution"]
    }


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """The course directory after the round trip (prints how long each autograde took)."""
    pytest.importorskip("nbgrader", reason="nbgrader is not installed: pip install .[course]")
    course = tmp_path_factory.mktemp("course")
    jupyter = tmp_path_factory.mktemp("jupyter")
    # The notebooks ask for the kernel "python3": this interpreter, quiet, on the CPU, with the
    # tutorials' small sizes.
    spec = jupyter / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python 3",
                "language": "python",
            }
        )
    )
    env = {
        **os.environ,
        "JUPYTER_PATH": str(jupyter),
        "KERAS_TRANSFORMER_FAST": "1",
        "CUDA_VISIBLE_DEVICES": "",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        # nbgrader runs `alembic` (its database migrations) by name
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
    }
    nbgrader_course.write_course(None, course)
    for assignment in dict.fromkeys(s[0] for s in SUBMISSIONS):
        _nbgrader(course, env, "generate_assignment", assignment)
        (source,) = (course / "source" / assignment).glob("*.ipynb")
        (released,) = (course / "release" / assignment).glob("*.ipynb")
        answers = _answers(source)
        for name, student, changes, _, _ in (s for s in SUBMISSIONS if s[0] == assignment):
            notebook = json.loads(released.read_text(encoding="utf-8"))
            for cell in notebook["cells"]:
                grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
                if grade_id in answers:
                    text = answers[grade_id]
                    for old, new in changes.get(grade_id, []):
                        assert old in text, (grade_id, old)
                        text = text.replace(old, new)
                    cell["source"] = text
            folder = course / "submitted" / student / name
            folder.mkdir(parents=True)
            (folder / released.name).write_text(json.dumps(notebook), encoding="utf-8")
        wall, cpu = _nbgrader(course, env, "autograde", assignment, "--create")
        _nbgrader(course, env, "generate_feedback", assignment)
        students = sum(s[0] == assignment for s in SUBMISSIONS)
        print(f"autograde {assignment}: {students} submissions, {wall:.0f} s, CPU {cpu:.0f} s")
    return course


def _grades(course, assignment, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission(assignment, student)
        return {
            grade.name: (grade.score, grade.max_score)
            for notebook in submission.notebooks
            for grade in notebook.grades
        }


@pytest.mark.parametrize(
    "assignment, student, changes, failing, words",
    SUBMISSIONS,
    ids=[f"{s[0][:20]}-{s[1]}" for s in SUBMISSIONS],
)
def test_autograde_scores_and_feedback(graded_course, assignment, student, changes, failing, words):
    grades = _grades(graded_course, assignment, student)
    assert grades, "no grade recorded"
    for name, (score, max_score) in grades.items():
        expected = 0 if name == failing else max_score
        assert score == expected, (name, score, max_score, grades)
    (feedback,) = (graded_course / "feedback" / student / assignment).glob("*.html")
    page = feedback.read_text(encoding="utf-8")
    (autograded,) = (graded_course / "autograded" / student / assignment).glob("*.ipynb")
    errors = [
        output
        for cell in _cells(autograded)
        if cell["metadata"].get("nbgrader", {}).get("grade")
        for output in cell["outputs"]
        if output["output_type"] == "error"
    ]
    if failing is None:
        assert errors == []
        return
    (error,) = errors
    (line,) = error["traceback"]  # the checker's message, one line, no traceback
    assert line.startswith("Check failed: ") and words in line, line
    assert "Traceback" not in line and "keras/src" not in line
    shown = line.removeprefix("Check failed: ")[:60]
    assert shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in page or (
        shown in page
    )


# The graded model.fit check, on tiny untrained models: what its message names.


def _tiny_model(causal=True, padding=True):
    import keras

    import keras_transformer as kt

    keras.utils.set_random_seed(0)
    source = keras.Input(shape=(None,), dtype="int32", name="source")
    target = keras.Input(shape=(None,), dtype="int32", name="target")
    source_mask = kt.layers.PaddingMask()(source) if padding else None
    x = kt.layers.PositionalEmbedding(8, 8, mask_zero=False)(source)
    x = kt.layers.EncoderLayer(2, 16, dropout=0.0)(x, padding_mask=source_mask)
    y = kt.layers.PositionalEmbedding(8, 8, mask_zero=False)(target)
    y = kt.layers.SelfAttention(2, causal=causal, dropout=0.0)(y)
    y = kt.layers.CrossAttention(2, dropout=0.0)(y, x, context_padding_mask=source_mask)
    logits = keras.layers.Dense(8)(y)
    return keras.Model({"source": source, "target": target}, logits)


HELD_OUT = ([[3, 4, 5, 6, 0, 0], [4, 5, 0, 0, 0, 0]], [[6, 5, 4, 3], [5, 4]])


def test_fit_check_names_a_loss_that_counts_padding():
    import keras

    from keras_transformer.exercises import check_trained_translator

    model = _tiny_model()
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(AssertionError, match="counts the padded labels"):
        check_trained_translator(model, *HELD_OUT, start=1, end=2, threshold=0.0)
    masked = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)
    model.compile(loss=masked)
    assert check_trained_translator(model, *HELD_OUT, start=1, end=2, threshold=0.0) is None


@pytest.mark.parametrize(
    "mistake, words",
    [
        ({"causal": False}, "no causal mask"),
        ({"padding": False}, "padding is appended to the source"),
        ({}, "no masking mistake found"),
    ],
)
def test_fit_check_below_the_pass_mark_names_the_mask(mistake, words):
    from keras_transformer.exercises import check_trained_translator

    model = _tiny_model(**mistake)
    with pytest.raises(AssertionError, match="below the pass mark 1.01") as caught:
        check_trained_translator(model, *HELD_OUT, start=1, end=2, threshold=1.01)
    assert words in str(caught.value)
