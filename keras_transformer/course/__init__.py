"""The course's notebooks: the tutorials shipped with the package and their student versions.

`notebooks.tutorials_dir()` finds the tutorial notebooks (package data of an installed wheel);
`notebooks.write_student_notebooks()` writes them with the exercise bodies removed, as
`keras-transformer exercises --out DIR` does. The checkers the notebooks call are
`keras_transformer.exercises`. Imports no TensorFlow.
"""
