"""The course as nbgrader coursework: `keras-transformer exercises --nbgrader DIR`.

Writes a course directory that nbgrader (https://nbgrader.readthedocs.io) takes as it is:
`nbgrader_config.py` and `source/<assignment>/<notebook>.ipynb`, one assignment per notebook
that has `exercise` cells: the tutorials that have some, then the graded assignments shipped
with the package (`course/assignments/`, such as `fit_a_transformer`). Each notebook keeps all
its cells; only their nbgrader metadata and two kinds of source change, read from the tags:

- an `exercise` cell becomes an autograded answer (a solution cell): the body of each function
  and method sits between `### BEGIN SOLUTION` and `### END SOLUTION`, which
  `nbgrader generate_assignment` replaces with `raise NotImplementedError()` in the student's
  copy (signatures and docstrings stay, as in `keras-transformer exercises --out`);
- a `checker` cell becomes a locked autograder test worth `points` (10 unless the cell's
  `keras_transformer.points` metadata says otherwise), its code run inside
  `kt.exercises.graded()` so that a failure shows the checker's one-line message
  (`Check failed: ...`), not a Keras traceback, in the notebook and in nbgrader's feedback;
- every other cell is locked (read-only): autograding restores it from the source notebook.

Imports no TensorFlow.

Example:
>>> cell = {"cell_type": "code", "metadata": {"tags": ["checker"]}, "outputs": [],
...         "execution_count": None, "source": "kt.exercises.check_add_norm(MyAddNorm)\\n"}
>>> graded = nbgrader_cell(cell, 3, set())
>>> print("".join(graded["source"]), end="")
with kt.exercises.graded():  # autograded: a failed check shows its message
    kt.exercises.check_add_norm(MyAddNorm)
>>> {k: graded["metadata"]["nbgrader"][k] for k in ("grade_id", "points", "locked")}
{'grade_id': 'check_add_norm', 'points': 10, 'locked': True}
"""

import ast
import importlib.resources
import json
import pathlib
import re

from keras_transformer.course.notebooks import (
    CHECKER_TAG,
    EXERCISE_TAG,
    exercise_bodies,
    tutorial_notebooks,
)
from keras_transformer.errors import UserInputError

BEGIN_SOLUTION, END_SOLUTION = "### BEGIN SOLUTION", "### END SOLUTION"
DEFAULT_POINTS = 10
SCHEMA_VERSION = 3
GRADED_WITH = "with kt.exercises.graded():  # autograded: a failed check shows its message"
_CHECKER_CALL = re.compile(r"kt\.exercises\.(check_\w+)\(")


def graded_assignments_dir() -> pathlib.Path:
    """The folder of the graded assignments shipped with the package (`course/assignments/`)."""
    return pathlib.Path(
        str(importlib.resources.files("keras_transformer.course").joinpath("assignments"))
    )


def solution_source(source: str) -> str:
    """An exercise cell with each function body between nbgrader's solution markers.

    Example:
    >>> print(solution_source("def double(x):\\n    return 2 * x\\n"), end="")
    def double(x):
        ### BEGIN SOLUTION
        return 2 * x
        ### END SOLUTION
    """
    lines = source.splitlines()
    for body in reversed(exercise_bodies(source)):
        if body.start == body.end:  # a docstring only: nothing to write
            continue
        pad = " " * body.indent
        written = lines[body.start : body.end]
        lines[body.start : body.end] = [pad + BEGIN_SOLUTION, *written, pad + END_SOLUTION]
    return "\n".join(lines) + "\n"


def graded_source(source: str) -> str:
    """A checker cell's code run inside `kt.exercises.graded()` (one-line failures)."""
    body = "\n".join(f"    {line}" if line.strip() else "" for line in source.splitlines())
    wrapped = f"{GRADED_WITH}\n{body}\n"
    try:
        ast.parse(wrapped)
    except SyntaxError as error:
        raise UserInputError(f"checker cell is not valid Python ({error}); fix the cell") from None
    return wrapped


def _unique(name: str, used: set[str]) -> str:
    found, number = name, 2
    while found in used:
        found, number = f"{name}_{number}", number + 1
    used.add(found)
    return found


def nbgrader_cell(cell: dict, index: int, used_ids: set[str]) -> dict:
    """`cell` (a notebook cell, changed in place and returned) as a cell of the nbgrader course.

    Args:
        cell: a cell of a tutorial notebook.
        index: its position in the notebook (names the read-only cells).
        used_ids: the grade ids given so far in this notebook (updated).
    """
    tags = cell.get("metadata", {}).get("tags", [])
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    if cell["cell_type"] == "code":
        cell["outputs"], cell["execution_count"] = [], None
    meta = {"grade": False, "solution": False, "locked": True, "task": False}
    if cell["cell_type"] == "code" and EXERCISE_TAG in tags:
        source = solution_source(source)
        first = exercise_bodies(source)[0].name.split(".")[0]
        meta.update(solution=True, locked=False, grade_id=_unique(f"answer_{first}", used_ids))
    elif cell["cell_type"] == "code" and CHECKER_TAG in tags:
        calls = _CHECKER_CALL.findall(source)
        points = cell.get("metadata", {}).get("keras_transformer", {}).get("points")
        points = DEFAULT_POINTS if points is None else points
        if not isinstance(points, int | float) or points <= 0:
            raise UserInputError(f"checker cell {index}: points={points!r} must be > 0")
        grade_id = _unique(calls[0] if calls else f"checker_cell_{index}", used_ids)
        source = graded_source(source)
        meta.update(grade=True, grade_id=grade_id, points=points)
    else:
        meta["grade_id"] = _unique(f"cell_{index:02d}", used_ids)
    meta["schema_version"] = SCHEMA_VERSION
    cell.setdefault("metadata", {})["nbgrader"] = meta
    cell["source"] = source.splitlines(keepends=True)
    return cell


def nbgrader_notebook(path: str | pathlib.Path) -> tuple[dict, int]:
    """The nbgrader source version of a notebook and its total points (0: no exercise).

    Args:
        path: a notebook whose cells are tagged `exercise` and `checker`.

    Returns:
        `(notebook as a dict, total points)`.
    """
    path = pathlib.Path(path)
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = notebook["cells"]
    if not any(
        c["cell_type"] == "code" and EXERCISE_TAG in c.get("metadata", {}).get("tags", [])
        for c in cells
    ):
        return notebook, 0
    used: set[str] = set()
    try:
        for index, cell in enumerate(cells):
            nbgrader_cell(cell, index, used)
    except ValueError as error:
        raise UserInputError(f"{path.name}: {error}") from None
    if not any(c["metadata"]["nbgrader"]["grade"] for c in cells):
        raise UserInputError(
            f"{path.name} has exercise cells but no cell tagged 'checker': nothing to grade"
        )
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    if "import keras_transformer as kt" not in code:
        raise UserInputError(
            f"{path.name}: the checker cells call kt.exercises.graded(); import keras_transformer "
            "as kt in a cell before them"
        )
    total = sum(c["metadata"]["nbgrader"].get("points", 0) for c in cells)
    return notebook, total


def course_notebooks(tutorials: str | pathlib.Path | None = None) -> list[pathlib.Path]:
    """The notebooks that become assignments: the tutorials, then the graded assignments."""
    return [*tutorial_notebooks(tutorials), *sorted(graded_assignments_dir().glob("*.ipynb"))]


def nbgrader_config(course_id: str) -> str:
    """The `nbgrader_config.py` written at the root of the course directory."""
    return f'''"""nbgrader configuration of the keras_transformer course (written by
`keras-transformer exercises --nbgrader`). Run nbgrader from this folder."""

c = get_config()  # noqa: F821 (nbgrader defines it)

c.CourseDirectory.course_id = {course_id!r}
# An exercise body becomes this stub in the released notebook (the checker says
# "... is not implemented yet" until the student writes it).
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
# Autograding runs every cell of a notebook: the tutorials and the graded model.fit train small
# models, so a cell may take minutes on a loaded CPU (nbgrader's default allows 30 s).
c.Execute.timeout = 1800
c.Execute.interrupt_on_timeout = True
# nbgrader scores a test cell 0 when it shows anything on stderr: keep TensorFlow's C++ log
# lines (written to the process's stderr: "failed call to cuInit" on a machine without a GPU)
# out of the notebooks. The checker cells show Python warnings on stdout (kt.exercises.graded).
c.Execute.extra_arguments = ["--IPKernelApp.capture_fd_output=False"]
'''


def write_course(
    tutorials: str | pathlib.Path | None,
    out: str | pathlib.Path,
    course_id: str = "keras_transformer",
) -> dict[str, int]:
    """Writes the nbgrader course directory.

    Args:
        tutorials: folder of the solution notebooks; `None`: the ones shipped with the package.
        out: the course directory (created if missing); `nbgrader_config.py` and `source/`
            are written in it, an existing `source/<assignment>/` of the same name replaced.
        course_id: nbgrader's `CourseDirectory.course_id`.

    Returns:
        `{assignment name: total points}`, in the course's order.

    Raises:
        UserInputError: when no tutorial has an `exercise` cell (a wrong `tutorials` folder).
    """
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--nbgrader {out} exists and is not a directory; pass another")
    if not any(nbgrader_notebook(path)[1] for path in tutorial_notebooks(tutorials)):
        raise UserInputError(
            f"no notebook in --tutorials {tutorials} has a cell tagged 'exercise'; pass the "
            "folder of the course notebooks"
        )
    assignments = {}
    for path in course_notebooks(tutorials):
        notebook, points = nbgrader_notebook(path)
        if not points:
            continue
        name = path.stem
        folder = out / "source" / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.ipynb"):
            old.unlink()
        text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
        (folder / path.name).write_text(text, encoding="utf-8")
        assignments[name] = points
    if assignments:
        (out / "nbgrader_config.py").write_text(nbgrader_config(course_id), encoding="utf-8")
    return assignments
