"""The package's value checks: a wrong type is a TypeError, a wrong value a ValueError, and
each message names the argument, the value received and what to pass."""

import pytest

from keras_transformer._validation import (
    check_divisible,
    check_int,
    check_length_range,
    check_number,
    check_probability,
    check_seed,
    in_interval,
    interval,
    is_int,
)


def test_is_int_takes_python_and_numpy_integers_but_not_bools_or_floats():
    import numpy as np

    values = (0, 7, np.int64(3), True, 1.0, "3", None)
    assert [is_int(v) for v in values] == [True, True, True, False, False, False, False]


def test_check_int_names_the_argument_the_value_and_the_bound():
    assert check_int("num_test", 0, minimum=0) == 0
    assert check_int("max_length", 3, minimum=3) == 3
    with pytest.raises(TypeError, match=r"^num_test must be an integer; received num_test=True\.$"):
        check_int("num_test", True, minimum=0)
    with pytest.raises(
        ValueError, match=r"^max_length must be an integer >= 3; received max_length=2\.$"
    ):
        check_int("max_length", 2, minimum=3)
    with pytest.raises(
        ValueError, match=r"^num_layers must be a positive integer; received num_layers=0\.$"
    ):
        check_int("num_layers", 0)
    with pytest.raises(ValueError, match=r"^seed must be an integer >= 0; received seed=-1\.$"):
        check_seed(-1)


def test_length_range_accepts_an_int_or_an_ordered_pair():
    assert check_length_range("length", 4) == (4, 4)
    assert check_length_range("length", [2, 5]) == (2, 5)
    with pytest.raises(TypeError, match=r"received length=\(2, 5.0\)"):
        check_length_range("length", (2, 5.0))
    with pytest.raises(
        ValueError, match=r"1 <= min <= max, e.g. \(4, 8\); received length=\(5, 2\)"
    ):
        check_length_range("length", (5, 2))


@pytest.mark.parametrize(
    "value, ends, inside",
    [
        (0.0, {}, True),  # [0, 1) holds its minimum
        (1.0, {}, False),  # ... but not its maximum
        (1.0, {"open_maximum": False}, True),  # [0, 1]
        (0.0, {"open_minimum": True}, False),  # (0, 1)
        (float("nan"), {}, False),
        (float("inf"), {"open_maximum": False}, False),
    ],
)
def test_in_interval_follows_the_open_and_closed_ends(value, ends, inside):
    assert in_interval(value, 0.0, 1.0, **ends) is inside
    assert interval(0.0, 1.0, **ends) == (
        ("(" if ends.get("open_minimum") else "[")
        + "0, 1"
        + ("]" if ends.get("open_maximum") is False else ")")
    )


def test_number_checks_share_one_message():
    with pytest.raises(
        ValueError, match=r"^dropout must be a number in \[0, 1\); received dropout=1\.0\.$"
    ):
        check_number("dropout", 1.0, 0.0, 1.0)
    assert check_probability("rate", 1.0) == 1.0  # a share of tokens may be all of them
    with pytest.raises(
        ValueError, match=r"^rate must be a number in \[0, 1\]; received rate=1\.5\.$"
    ):
        check_probability("rate", 1.5)
    with pytest.raises(TypeError, match=r"rate must be a number in \[0, 1\]; received rate='0\.5'"):
        check_probability("rate", "0.5")


def test_divisibility_names_the_nearest_sizes_for_the_api_and_for_the_flags():
    check_divisible(128, 8)
    with pytest.raises(
        ValueError,
        match=r"^d_model=130 must be divisible by num_heads=4 .*use d_model=128 or 132, or num_heads=2, 5 or 10, or pass key_dim",
    ):
        check_divisible(130, 4)
    with pytest.raises(
        ValueError,
        match=r"^--d-model 130 is not divisible by --num-heads 4 .*use --d-model 128 or 132, or --num-heads 2, 5 or 10\.$",
    ):
        check_divisible(130, 4, flags=True)
