"""Locate the course's tutorial notebooks and write their student versions.

A tutorial notebook marks the cells where the student writes a piece of the Transformer with the
cell tag `exercise` and the cells that check it (`kt.exercises.check_...`) with `checker`. The
student version of a notebook keeps every cell, empties the outputs and stubs the bodies of the
functions of the `exercise` cells. Imports no TensorFlow: `keras-transformer exercises` starts fast.

Example:
>>> sorted(path.name for path in tutorial_notebooks())[0]
'01_attention_from_scratch.ipynb'
"""

import ast
import importlib.resources
import json
import pathlib
from typing import NamedTuple

from keras_transformer.errors import UserInputError

EXERCISE_TAG = "exercise"
CHECKER_TAG = "checker"


class ExerciseBody(NamedTuple):
    """The body of one function or method of an exercise cell: what the student writes.

    `lines[start:end]` of the cell's source lines (0-based, `end` excluded) are the body after
    the docstring; `start == end` for a function that is a docstring only. `indent` is the
    body's indentation, `name` the function's (`Class.method` for a method).
    """

    name: str
    start: int
    end: int
    indent: int


def exercise_bodies(source: str) -> list[ExerciseBody]:
    """The bodies of the top-level functions and methods of an exercise cell, in source order.

    Student versions stub them (`student_version`); the nbgrader course puts them between
    nbgrader's solution markers (`keras_transformer.course.nbgrader_course`).

    Args:
        source: the Python source of the exercise cell (IPython magics aside).

    Returns:
        One `ExerciseBody` per function or method.

    Example:
    >>> exercise_bodies("def double(x):\\n    y = 2 * x\\n    return y\\n")
    [ExerciseBody(name='double', start=1, end=3, indent=4)]
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        raise UserInputError(f"exercise cell is not valid Python ({error}); fix the cell") from None
    functions = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append((node, node.name))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    functions.append((item, f"{node.name}.{item.name}"))
    if not functions:
        raise UserInputError("exercise cell defines no function or class; tag only cells that do")
    bodies = []
    for node, name in sorted(functions, key=lambda pair: pair[0].lineno):
        body = node.body
        has_doc = ast.get_docstring(node, clean=False) is not None
        first = body[1] if has_doc and len(body) > 1 else (None if has_doc else body[0])
        indent = body[0].col_offset
        if first is None:  # a docstring only
            bodies.append(ExerciseBody(name, body[0].end_lineno, body[0].end_lineno, indent))
        else:
            bodies.append(ExerciseBody(name, first.lineno - 1, node.end_lineno, indent))
    return bodies


def student_version(source: str) -> str:
    """The student version of an exercise cell: every body becomes `raise NotImplementedError`.

    Top-level functions and methods keep decorators, signature and docstring.

    Args:
        source: the Python source of the exercise cell (IPython magics aside).

    Returns:
        The source with the bodies removed.

    Example:
    >>> print(student_version("def double(x):\\n    return 2 * x\\n"), end="")
    def double(x):
        raise NotImplementedError("exercise: write double")
    """
    lines = source.splitlines()
    for body in reversed(exercise_bodies(source)):
        stub = f'{" " * body.indent}raise NotImplementedError("exercise: write {body.name}")'
        lines[body.start : body.end] = [stub]
    return "\n".join(lines) + "\n"


NOTEBOOK_PATTERN = "[0-9][0-9]_*.ipynb"


def tutorials_dir() -> pathlib.Path:
    """The folder of the tutorial notebooks (the solutions).

    They are package data in `keras_transformer/course/tutorials/`: a wheel holds a copy of the
    clone's `tutorials/` made when it was built, and an editable install of a clone (`pip install
    -e .`) a link to them (`setup.py`).

    Returns:
        The folder's path.
    """
    packaged = importlib.resources.files("keras_transformer.course").joinpath("tutorials")
    if packaged.is_dir():
        return pathlib.Path(str(packaged))
    raise FileNotFoundError(
        f"the tutorial notebooks are not installed ({packaged} is missing): reinstall "
        "keras_transformer (from a wheel, or `pip install -e .` in a clone), or pass --tutorials DIR"
    )


def tutorial_notebooks(tutorials: str | pathlib.Path | None = None) -> list[pathlib.Path]:
    """The numbered tutorial notebooks (`01_*.ipynb`, ...) of `tutorials` (default: shipped)."""
    folder = tutorials_dir() if tutorials is None else pathlib.Path(tutorials)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"--tutorials {folder} is not a directory; pass the folder of the tutorial notebooks"
        )
    return sorted(folder.glob(NOTEBOOK_PATTERN))


def write_student_notebooks(
    tutorials: str | pathlib.Path | None, out: str | pathlib.Path
) -> list[pathlib.Path]:
    """Writes each tutorial that has `exercise` cells, their function bodies stubbed.

    Args:
        tutorials: folder of the solution notebooks; `None`: the ones shipped with the package.
        out: folder for the student notebooks (created if missing).

    Returns:
        The paths written, in the tutorials' order (empty when no notebook has an exercise).
    """
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} exists and is not a directory; pass another --out")
    written = []
    for path in tutorial_notebooks(tutorials):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        changed = 0
        for cell in (c for c in notebook["cells"] if c["cell_type"] == "code"):
            cell["outputs"], cell["execution_count"] = [], None
            if EXERCISE_TAG in cell.get("metadata", {}).get("tags", []):
                try:
                    stub = student_version("".join(cell["source"]))
                except ValueError as error:
                    raise UserInputError(f"{path.name}: {error}") from None
                cell["source"] = stub.splitlines(keepends=True)
                changed += 1
        if changed:
            out.mkdir(parents=True, exist_ok=True)
            target = out / path.name
            target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", "utf-8")
            written.append(target)
    return written


def students_readme(notebooks: list[pathlib.Path], solutions: pathlib.Path) -> str:
    """The README.md written beside the student notebooks: open, check, where the answers are.

    Example:
    >>> text = students_readme([pathlib.Path("01_a.ipynb")], pathlib.Path("/solutions"))
    >>> "jupyter lab" in text and "kt.exercises" in text and "/solutions" in text
    True
    """
    listed = "\n".join(f"- `{path.name}`" for path in notebooks)
    return f"""# Transformer exercises

The notebooks of the keras_transformer course with the body of each exercise function
replaced by `raise NotImplementedError("exercise: write ...")`. Work through them in order;
each one builds on the pieces of the one before.

{listed}

## Open them

```bash
pip install jupyterlab        # once, in the environment where keras_transformer is installed
jupyter lab .                 # from this folder; or open the .ipynb files in VS Code
```

## Check your work

Write the body of each exercise function, run its cell, then run the checker cell after it.
A checker compares your code with the package's own layers on small batches
(`import keras_transformer as kt; kt.exercises.check_scaled_dot_product_attention(fn)`):
it prints nothing when your code is right and raises an `AssertionError` that names the
mistake and the section of the paper to re-read when it is not. `help(kt.exercises)` lists
every checker and the contract (calls, shapes, weights) it expects.

## The answers

The solution notebooks (these notebooks with the exercises written, without outputs: run
them to see them) are installed with the package, in

    {solutions}

(`python -c "from keras_transformer.course import notebooks; print(notebooks.tutorials_dir())"`).
Try the exercise and its checker first: the checker's message is usually the quicker hint.
"""
