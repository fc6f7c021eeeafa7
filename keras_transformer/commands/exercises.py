"""`keras-transformer exercises --out DIR`: the tutorials as exercises for students."""

import json
import os
import pathlib

DEFAULT_TUTORIALS = pathlib.Path(__file__).resolve().parents[2] / "tutorials"


def register(sub) -> None:
    # fmt: off
    p = sub.add_parser("exercises", description=__doc__.splitlines()[0], help="write the student "
                       "versions of the tutorials (exercise bodies removed)")
    p.add_argument("--out", required=True, help="directory for the student notebooks")
    p.add_argument("--tutorials", default=str(DEFAULT_TUTORIALS), help="directory of the "
                   "solution notebooks (default: the repository's tutorials/)")
    p.set_defaults(func=run)
    # fmt: on


def write_student_notebooks(tutorials, out) -> list[pathlib.Path]:
    """Writes each tutorial with `exercise` cells, their function bodies stubbed; returns paths."""
    from keras_transformer.exercises import EXERCISE_TAG, student_version

    tutorials, out = pathlib.Path(tutorials), pathlib.Path(out)
    if not tutorials.is_dir():
        raise FileNotFoundError(f"--tutorials {tutorials} is not a directory; pass the folder of "
                                f"the tutorial notebooks")  # fmt: skip
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"--out {out} exists and is not a directory; pass another --out")
    written = []
    for path in sorted(tutorials.glob("[0-9][0-9]_*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        changed = 0
        for cell in (c for c in notebook["cells"] if c["cell_type"] == "code"):
            cell["outputs"], cell["execution_count"] = [], None
            if EXERCISE_TAG in cell.get("metadata", {}).get("tags", []):
                try:
                    stub = student_version("".join(cell["source"]))
                except ValueError as error:
                    raise ValueError(f"{path.name}: {error}") from None
                cell["source"] = stub.splitlines(keepends=True)
                changed += 1
        if changed:
            out.mkdir(parents=True, exist_ok=True)
            target = out / path.name
            target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", "utf-8")
            written.append(target)
    return written


def run(args) -> int:
    written = write_student_notebooks(args.tutorials, args.out)
    if not written:
        raise ValueError(f"no notebook in --tutorials {args.tutorials} has a cell tagged "
                         f"'exercise'; pass the folder of the course notebooks")  # fmt: skip
    print(*map(os.fspath, written), sep="\n")
    print(f"wrote {len(written)} student notebooks to {args.out}")
    return 0
