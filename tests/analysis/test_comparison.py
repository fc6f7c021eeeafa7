"""`keras-transformer compare --size tiny`: every output file, and directions in the results."""

import json

import matplotlib.image
import pytest

from keras_transformer.analysis.comparison import (
    PLOTS,
    SIZES,
    comparison_markdown,
    run_comparison,
)
from keras_transformer.cli import main


@pytest.fixture(scope="module")
def compare_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "run"
    assert main(["compare", "--size", "tiny", "--out", str(out), "--seed", "1"]) == 0
    return out


def test_every_output_file_is_written(compare_dir):
    assert (compare_dir / "comparison.json").is_file()
    assert (compare_dir / "comparison.md").is_file()
    for name in PLOTS:
        image = matplotlib.image.imread(compare_dir / "plots" / name)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    assert sorted(p.name for p in (compare_dir / "plots").iterdir()) == sorted(PLOTS)


def test_json_holds_every_section_with_the_documented_directions(compare_dir):
    results = json.loads((compare_dir / "comparison.json").read_text())
    assert {"analytic", "measured", "gradients", "timing", "long_range"} <= set(results)
    assert results["settings"]["size"] == "tiny" and results["settings"]["seed"] == 1

    layers = results["measured"]["layers"]
    lengths = results["measured"]["lengths"]
    for kind, values in layers.items():
        assert values["flops_equal_formula"] and values["parameters_equal_formula"], kind
    assert layers["rnn"]["sequential_steps"] == lengths
    assert layers["self_attention"]["sequential_steps"] == [1] * len(lengths)
    assert (
        layers["self_attention"]["flops_growth_exponent"] > layers["rnn"]["flops_growth_exponent"]
    )
    loop = results["measured"]["recurrent_loop"]
    assert loop["steps"] == loop["lengths"]

    curves = results["gradients"]["curves"]
    assert curves["transformer"]["decay_ratio"] > 10 * curves["rnn"]["decay_ratio"]
    assert curves["cnn"]["norm"][-1] == 0.0

    timing = results["timing"]
    assert all(len(timing["seconds"][k]) == len(timing["lengths"]) for k in timing["kinds"])

    long_range = results["long_range"]
    assert set(long_range["accuracy"]) == set(SIZES["tiny"]["long_range"]["models"])
    assert all(len(a) == len(long_range["distances"]) for a in long_range["accuracy"].values())


def test_markdown_has_a_table_and_a_sentence_per_section(compare_dir):
    text = (compare_dir / "comparison.md").read_text()
    for heading in ("## 1.", "## 2.", "## 3.", "## 4.", "## 5."):
        section = text.split(heading, 1)[1].split("\n## ", 1)[0]
        assert "|---|" in section, heading
        assert ". " in section.replace("|", ""), heading
    results = json.loads((compare_dir / "comparison.json").read_text())
    assert comparison_markdown(results) == text


def test_unknown_size_and_bad_out(tmp_path, capsys):
    with pytest.raises(ValueError, match="size='huge'"):
        run_comparison("huge")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["compare", "--size", "tiny", "--out", str(blocker)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_compare_size_flag_offers_exactly_the_sizes_run_comparison_knows():
    """`compare --size` reads its choices from `choices.COMPARISON_SIZES`, which imports no
    TensorFlow; `SIZES` must hold one setting per name, no more."""
    from keras_transformer.choices import COMPARISON_SIZES

    assert tuple(SIZES) == COMPARISON_SIZES
