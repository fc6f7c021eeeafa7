"""`keras-transformer exercises --out DIR | --nbgrader DIR`: the tutorials as exercises."""

import os
import pathlib

from keras_transformer.errors import UserInputError


def register(sub) -> None:
    p = sub.add_parser(
        "exercises",
        description=__doc__.splitlines()[0],
        help="write the student versions of the tutorials (exercise bodies removed) and a "
        "README, or an nbgrader course of them",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--out", help="directory for the student notebooks (default: none; --out or --nbgrader)"
    )
    where.add_argument(
        "--nbgrader",
        metavar="DIR",
        help="write an nbgrader course directory instead: nbgrader_config.py and "
        "source/<assignment>/ (one autograded assignment per notebook with exercises; "
        "default: none, --out or --nbgrader)",
    )
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
    if args.nbgrader is not None:
        return _nbgrader(tutorials, args.nbgrader)
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


def _nbgrader(tutorials, out) -> int:
    from keras_transformer.course import nbgrader_course

    assignments = nbgrader_course.write_course(tutorials, out)
    width = max(map(len, assignments))
    for name, points in assignments.items():
        print(f"{name:<{width}}  {points:g} points")
    print(
        f"wrote {len(assignments)} assignments to {os.path.join(out, 'source')} and "
        f"nbgrader_config.py; from {out}: nbgrader generate_assignment NAME"
    )
    return 0
