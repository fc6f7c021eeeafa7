"""The course's code: the tutorials shipped with the package, their student versions, and the
checkers the notebooks call.

`notebooks.tutorials_dir()` finds the tutorial notebooks (package data of an installed wheel);
`notebooks.write_student_notebooks()` writes them with the exercise bodies removed, as
`keras-transformer exercises --out DIR` does (imports no TensorFlow);
`nbgrader_course.write_course()` writes them as nbgrader assignments, with the graded
notebooks of `assignments/` (`keras-transformer exercises --nbgrader DIR`).

The checkers' public names are `keras_transformer.exercises.check_...`; they live here, split by
what they do: `attention_checks` (notebooks 01-03), `layer_checks` (04-05), `model_checks`
(06-07) and `fit_checks` (the graded `model.fit` assignment) probe a student's code,
`checking` runs it and words the failure (`graded()`: one line in an nbgrader test cell),
`references` computes each piece in NumPy with the known mistakes switched in, `diagnosis`
names the mistake.
"""
