"""The data modules' own checks: a wrong type is a TypeError, a wrong value a ValueError."""

import pytest

from keras_transformer.data._checks import check_int, check_length_range, check_seed, is_int


def test_is_int_refuses_bools_and_floats():
    assert [is_int(v) for v in (0, 7, True, 1.0, "3", None)] == [
        True,
        True,
        False,
        False,
        False,
        False,
    ]


def test_check_int_names_the_argument_and_value():
    assert check_int("num_test", 0) == 0
    assert check_int("max_length", 3, minimum=3) == 3
    with pytest.raises(TypeError, match="num_test=True must be an int"):
        check_int("num_test", True)
    with pytest.raises(ValueError, match="max_length=2 must be >= 3"):
        check_int("max_length", 2, minimum=3)
    with pytest.raises(ValueError, match="seed=-1 must be >= 0"):
        check_seed(-1)


def test_length_range_accepts_an_int_or_an_ordered_pair():
    assert check_length_range("length", 4) == (4, 4)
    assert check_length_range("length", [2, 5]) == (2, 5)
    with pytest.raises(TypeError, match=r"length=\(2, 5.0\)"):
        check_length_range("length", (2, 5.0))
    with pytest.raises(ValueError, match=r"length=\(5, 2\) must satisfy 1 <= min <= max"):
        check_length_range("length", (5, 2))
