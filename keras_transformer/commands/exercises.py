"""`keras-transformer exercises --out DIR`: the tutorials as exercises for students."""

import os
import pathlib

from keras_transformer.errors import UserInputError


def register(sub) -> None:
    p = sub.add_parser(
        "exercises",
        description=__doc__.splitlines()[0],
        help="write the student versions of the tutorials (exercise bodies removed) and a README",
    )
    p.add_argument("--out", required=True, help="directory for the student notebooks")
    p.add_argument(
        "--tutorials",
        default=None,
        help="directory of the solution notebooks "
        "(default: the tutorials installed with the package)",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from keras_transformer.course import notebooks

    tutorials = notebooks.tutorials_dir() if args.tutorials is None else args.tutorials
    written = notebooks.write_student_notebooks(tutorials, args.out)
    if not written:
        raise UserInputError(
            f"no notebook in --tutorials {tutorials} has a cell tagged "
            f"'exercise'; pass the folder of the course notebooks"
        )
    readme = pathlib.Path(args.out) / "README.md"
    solutions = pathlib.Path(tutorials).resolve()
    readme.write_text(notebooks.students_readme(written, solutions), encoding="utf-8")
    print(*map(os.fspath, written), sep="\n")
    print(f"wrote {len(written)} student notebooks and {readme.name} to {args.out}")
    return 0
