"""Running a student's code and wording what went wrong: the checkers' shared helpers.

A checker calls the student's function or layer through `run`, which turns any exception into
one readable `AssertionError`; `fail` raises the message of a mistake found, and the
`student_facing` decorator keeps the checker's own frames out of the student's traceback.
The rest reads what the student returned (`as_array`, `shaped_output`), compares it
(`close`, `close_on`, `max_diff`) and fills layers with the same random weights as the
reference (`make_layer`, `copy_weights`, `random_weights`, `reference_weights`).
"""

import contextlib
import functools
import re
import sys
import traceback
from typing import NoReturn

import keras
import numpy as np


def fail(message: str) -> NoReturn:
    """Raises the `AssertionError` the student reads: `message`, no chained cause."""
    raise AssertionError(message) from None


def student_facing(check):
    """Re-raises the checker's AssertionError without the checker's own frames or the chained
    exception: a student's traceback ends at the line that called the checker."""

    @functools.wraps(check)
    def wrapper(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except AssertionError as error:
            message = str(error)
        raise AssertionError(message) from None

    return wrapper


class CheckFailed(AssertionError):
    """A failed check, shown as one line in a notebook: `Check failed: <message>`.

    IPython draws an exception that has `_render_traceback_()` with the lines it returns instead
    of the traceback, and nbgrader's feedback shows what the notebook showed.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"Check failed: {self}"]


@contextlib.contextmanager
def graded():
    """Runs a checker cell so that a failure reads as the checker's one-line message.

    The checker cells of the nbgrader course (`keras-transformer exercises --nbgrader DIR`) run
    inside it. nbgrader scores a test cell 0 when it writes to stderr, so what the cell's
    Python code writes there (a warning, a Keras message) is shown on stdout instead. An
    `AssertionError` (a checker's message, or a bare `assert` of the cell, shown with its line)
    or any other exception of the cell becomes `CheckFailed`, which a notebook shows as one
    line, where a Keras traceback would bury the message.

    Example:
    >>> with graded():
    ...     assert 1 + 1 == 3
    Traceback (most recent call last):
    ...
    keras_transformer.course.checking.CheckFailed: assert 1 + 1 == 3
    """
    try:
        with contextlib.redirect_stderr(sys.stdout):
            yield
    except AssertionError as error:
        message = " ".join(str(error).split())
        if not message:  # a bare `assert` in the cell: its line says what was checked
            frames = traceback.extract_tb(error.__traceback__)
            message = (frames[-1].line or "an assertion failed") if frames else ""
        raise CheckFailed(message or "an assertion failed") from None
    except Exception as error:
        line = _informative_line(error)
        raise CheckFailed(
            f"{type(error).__name__}: {line}" if line else type(error).__name__
        ) from None


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MATMUL_T = (
    "; transposing a batched key with `.T` reverses every axis ((batch, len, d) -> "
    "(d, len, batch)): swap only the last two, `np.swapaxes(key, -1, -2)` or "
    "`key.transpose(0, 2, 1)`"
)


def _informative_line(error: Exception) -> str:
    """The line of an exception's message that says what went wrong.

    Keras wraps an error raised inside a layer as "Exception encountered when calling
    X.call().", the cause a few lines below and "Arguments received by ..." after it.
    """
    lines = [line.strip() for line in _ANSI.sub("", str(error)).splitlines() if line.strip()]
    if lines and lines[0].startswith("Exception encountered when calling"):
        where = lines[0].removeprefix("Exception encountered when calling").strip(" .")
        for line in lines[1:]:
            if line.startswith("Arguments received by"):
                break
            return f"{line} (in {where})"
    return lines[0] if lines else ""


_FUNCTION_NODE = re.compile(r"\{\{function_node [^}]*\}\}\s*")
_OP = re.compile(r"\s*\[Op:(\w+)\](\s*name:[^\s(]*)?")
_WHERE = re.compile(
    r"condition \[([\d,]*)\], then \[([\d,]*)\], and else \[([\d,]*)\] must be broadcastable"
)
_INCOMPATIBLE = re.compile(r"Incompatible shapes: \[([\d,]*)\] vs\. \[([\d,]*)\]")
_OP_WORDS = {
    "AddV2": "an addition (+)",
    "Sub": "a subtraction (-)",
    "Mul": "a multiplication (*)",
    "RealDiv": "a division (/)",
    "SelectV2": "a where(mask, ...)",
    "LogicalAnd": "a logical_and of masks",
    "BatchMatMulV2": "a matmul",
}


def _shape(text: str) -> str:
    sizes = [s for s in text.split(",") if s]
    return f"({', '.join(sizes)}{',' if len(sizes) == 1 else ''})"


def tensorflow_free(message: str) -> str:
    """A TensorFlow error message in a student's words: no `{{function_node ...}}` prefix, no
    `[Op:...]` suffix; "Incompatible shapes: [a] vs. [b]" said as which shapes met where."""
    op = _OP.search(message)
    message = _OP.sub("", _FUNCTION_NODE.sub("", message)).strip()
    shapes = _INCOMPATIBLE.search(message)
    if shapes:
        where = _OP_WORDS.get(op.group(1), "an element-wise operation") if op else "an operation"
        first, second = (_shape(g) for g in shapes.groups())
        message = (
            f"{where} received tensors of shapes {first} and {second}, which do not match "
            "(each axis must be equal, or 1 to broadcast)"
        )
    where = _WHERE.search(message)
    if where:
        mask, then, other = (_shape(g) for g in where.groups())
        message = (
            f"a where(mask, ...) received a mask of shape {mask} and values of shapes {then} "
            f"and {other}, which do not broadcast (each axis must be equal, or 1)"
        )
    return message


def shapes_in(message: str) -> list[tuple[int, ...]]:
    """The shapes `(2, 4, 16)` a message names, in order."""
    found = re.findall(r"\((\d+(?:, \d+)*),?\)", message)
    return [tuple(int(n) for n in text.split(", ")) for text in found]


def run(what: str, fn, *args, **kwargs):
    """Calls the student's code; its exceptions become one readable AssertionError."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        fail(f"{what} is not implemented yet: it raised NotImplementedError")
    except AssertionError:
        raise
    except Exception as error:  # the student's bug, reported, not a crash of the checker
        message = tensorflow_free(_informative_line(error))[:400]
        if "matmul" in message and "mismatch in its core dimension" in message:
            message += _MATMUL_T
        name = type(error).__name__
        if name == "InvalidArgumentError":  # TensorFlow's; the student reads what went wrong
            fail(f"{what} failed: {message}")
        fail(f"{what} raised {name}: {message}")


def as_array(x, what: str) -> np.ndarray:
    try:
        return np.asarray(keras.ops.convert_to_numpy(x), dtype="float64")
    except Exception as error:
        fail(f"{what} is not an array or tensor of numbers ({type(x).__name__}: {error})")


def close(a, b, loose=False) -> bool:
    """Equal up to float32 round-off (`loose`: up to a LayerNorm epsilon of 1e-3)."""
    rtol, atol = (1e-2, 3e-3) if loose else (1e-3, 1e-4)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol))


def max_diff(a, b) -> str:
    return f"largest difference {np.max(np.abs(a - b)):.3g}"


def shaped_output(what: str, value, shape, sec: str, axes: str = "") -> np.ndarray:
    """The student's `value` as an array; fails unless its shape is `shape`."""
    out = as_array(value, what)
    if out.shape != shape:
        fail(f"{what} returned shape {out.shape}; expected {axes}{shape} {sec}")
    return out


def make_layer(cls, **kwargs):
    arguments = ", ".join(f"{key}={value}" for key, value in kwargs.items())
    what = f"{getattr(cls, '__name__', 'cls')}({arguments})"
    layer = run(what, cls, **kwargs)
    if not isinstance(layer, keras.layers.Layer):
        fail(f"{what} returned {type(layer).__name__}, not a keras.layers.Layer subclass")
    return layer


def copy_weights(layer, arrays, what: str, layout: str):
    """Assigns `arrays` to the layer's trainable weights in creation order (reshaped)."""
    variables = list(layer.trainable_weights)
    found = [tuple(v.shape) for v in variables]
    expected = [a.shape for a in arrays]
    if [int(np.prod(f)) for f in found] != [int(np.prod(e)) for e in expected]:
        unused = [
            f"self.{name} ({type(sub).__name__})"
            for name, sub in vars(layer).items()
            if isinstance(sub, keras.layers.Layer) and not sub.built
        ]
        if unused and len(variables) < len(arrays):
            fail(
                f"{what} creates {', '.join(unused)} but never calls it in call(), so it has "
                f"no weights ({len(variables)} trainable weights found, {len(arrays)} expected: "
                f"{layout}); apply it where the paper does"
            )
        fail(
            f"{what} should hold {len(arrays)} trainable weights, in creation order: {layout}, "
            f"shapes {expected}; found {len(variables)}: {found}"
        )
    for variable, array in zip(variables, arrays, strict=True):
        variable.assign(np.reshape(array, variable.shape).astype(variable.dtype))


def random_weights(rng, shapes):
    """float32 normals: kernels times 0.4, biases (1-D) times 0.1."""
    return [
        (rng.standard_normal(s) * (0.4 if len(s) > 1 else 0.1)).astype("float32") for s in shapes
    ]


def close_on(a, b, rows, loose=True) -> bool:
    """`close` on the positions `rows` (batch, len) only."""
    return a.shape == b.shape and bool(rows.any()) and close(a[rows], b[rows], loose)


def positions_text(rows) -> str:
    """'sentence 1, positions 4, 5' for a boolean (batch, len)."""
    return "; ".join(
        f"sentence {b}, position{'s' if row.sum() > 1 else ''} "
        f"{', '.join(str(i) for i in np.flatnonzero(row))}"
        for b, row in enumerate(rows)
        if row.any()
    )


def reference_weights(reference, rng, *inputs):
    """Builds `reference` on `inputs`, fills it with random weights, returns them (2-D)."""
    reference(*inputs)
    flat = []
    for variable in reference.trainable_weights:
        shape, gamma = tuple(variable.shape), variable.path.endswith("gamma")
        scale = 0.2 if gamma else 0.1 if variable.path.endswith(("beta", "bias")) else 0.4
        array = (gamma + scale * rng.standard_normal(shape)).astype("float32")  # gamma about 1
        variable.assign(array)
        # the student's layout: kernels (d_in, d_out), biases (d_out,), row-major
        if array.ndim == 3 and variable.path.endswith("attention_output/kernel"):
            array = array.reshape(-1, shape[-1])  # (heads, d_head, d_model) -> (d_model, d_model)
        elif array.ndim == 3:
            array = array.reshape(shape[0], -1)  # (d_model, heads, d_head) -> (d_model, d_model)
        elif array.ndim == 2 and variable.path.endswith("bias"):
            array = array.reshape(-1)  # (heads, d_head) -> (d_model,)
        flat.append(array)
    return flat
