"""Fixtures of the inference tests."""

import pytest

from tests.inference.varied_run import make_varied_run


@pytest.fixture(scope="session")
def varied_run(tiny_run, tmp_path_factory):
    return make_varied_run(tiny_run, tmp_path_factory.mktemp("varied") / "run")
