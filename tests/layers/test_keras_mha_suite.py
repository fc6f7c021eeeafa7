"""Keras's own MultiHeadAttention tests, run against ours (issue 29).

The test file ships in the installed keras wheel; it is read from there at test time (never
copied into this repository), run in a subprocess with `layers.MultiHeadAttention` replaced by
`keras_transformer.layers.MultiHeadAttention`, and every test must pass except those named in
`KERAS_DIFFERENCES`, the one list the API docs page shows too.
"""

import importlib.util
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from keras_transformer.layers.attention import KERAS_DIFFERENCES

KERAS_TEST_MODULE = "keras.src.layers.attention.multi_head_attention_test"
ROOT = Path(__file__).resolve().parents[2]

# Put ours where Keras's test file looks the class up (`from keras.src import layers`, then
# `layers.MultiHeadAttention(...)` at call time), before any of its tests runs.
CONFTEST = """
import keras.src.layers

from keras_transformer.layers import MultiHeadAttention

keras.src.layers.MultiHeadAttention = MultiHeadAttention
"""


def keras_test_file() -> Path:
    spec = importlib.util.find_spec(KERAS_TEST_MODULE)
    if spec is None or spec.origin is None:
        pytest.skip(f"the installed keras does not ship {KERAS_TEST_MODULE}")
    return Path(spec.origin)


def outcomes(junit_xml: Path) -> dict[str, str]:
    """`{test name: "passed" | "failed" | "skipped"}` from pytest's JUnit XML report."""
    results = {}
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        failed = kinds & {"failure", "error"}
        results[case.get("name")] = (
            "failed" if failed else "skipped" if "skipped" in kinds else "passed"
        )
    return results


@pytest.fixture(scope="module")
def keras_suite(tmp_path_factory) -> tuple[dict[str, str], str]:
    work = tmp_path_factory.mktemp("keras_mha_suite")
    (work / "multi_head_attention_test.py").write_text(keras_test_file().read_text())
    (work / "conftest.py").write_text(CONFTEST)
    (work / "pytest.ini").write_text("[pytest]\n")  # not this repository's settings
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    env.update(TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow")
    command = [sys.executable, "-m", "pytest", "multi_head_attention_test.py", "-q", "-rf"]
    command += ["-p", "no:cacheprovider", "-p", "no:randomly", f"--junitxml={work / 'junit.xml'}"]
    run = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    if not (work / "junit.xml").is_file():
        pytest.fail(f"Keras's test file did not run:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}")
    return outcomes(work / "junit.xml"), run.stdout


SUITE_ON_TENSORFLOW = pytest.mark.requires_tensorflow(
    "runs Keras's own MultiHeadAttention tests in a TensorFlow-backend subprocess (minutes); "
    "the TensorFlow run of the suite covers it"
)


@SUITE_ON_TENSORFLOW
def test_keras_tests_pass_outside_the_documented_differences(keras_suite):
    results, log = keras_suite
    assert len(results) > 30, f"too few of Keras's tests ran: {sorted(results)}"
    unexpected = sorted(
        n for n, r in results.items() if r == "failed" and n not in KERAS_DIFFERENCES
    )
    assert not unexpected, (
        f"Keras's tests failing outside KERAS_DIFFERENCES: {unexpected}\n{log[-6000:]}"
    )


@SUITE_ON_TENSORFLOW
def test_documented_differences_still_differ(keras_suite):
    """A listed test that passes is a stale entry: the docs would claim a difference that is gone."""
    results, _ = keras_suite
    stale = sorted(n for n in KERAS_DIFFERENCES if results.get(n) == "passed")
    assert not stale, f"these pass now; remove them from KERAS_DIFFERENCES: {stale}"
    unknown = sorted(n for n in KERAS_DIFFERENCES if n not in results)
    assert not unknown, f"KERAS_DIFFERENCES names tests Keras's file lacks: {unknown}"


# Keras's tests of what a Keras user relies on: shapes, masks, arguments, outputs. None of them
# may ever be listed as a difference (the layer must pass them).
USER_FACING = re.compile(
    r"test_(basics$|compute_output_shape|shape_mismatch|invalid_scalar|query_mask|masking|"
    r"no_warning|correctness|symbolic_return|multi_head_attention_output_shape|"
    r"causal_only_(fast_path|with_other_mask|masks_when_fused))"
)
ALLOWED_REASONS = re.compile(
    r"attention_axes|sliding_window|use_gate|LoRA|int8|dtype-policy|flash|private"
)


def test_differences_are_extensions_or_private_internals_only():
    assert not [name for name in KERAS_DIFFERENCES if USER_FACING.match(name)]
    for name, reason in KERAS_DIFFERENCES.items():
        assert isinstance(reason, str) and "\n" not in reason and ALLOWED_REASONS.search(reason), (
            name
        )


def test_api_docs_list_exactly_the_differences():
    page = (ROOT / "docs" / "api" / "layers.md").read_text(encoding="utf-8")
    section = page.split("## Differences from `keras.layers.MultiHeadAttention`", 1)
    assert len(section) == 2, "docs/api/layers.md lacks the differences section"
    rows = re.findall(r"^\| `(test_\w+)` \| (.+?) \|$", section[1], flags=re.MULTILINE)
    assert dict(rows) == KERAS_DIFFERENCES
