"""What `train` writes, and when: nothing before the settings are checked, the
completion marker (`metrics.json`) last, and small data trains."""

import json
import shutil

import pytest

from keras_transformer.training import run as run_module
from keras_transformer.training.config import TrainConfig
from keras_transformer.training.run import train

TINY = dict(
    num_train=200,
    num_validation=32,
    num_test=16,
    epochs=1,
    num_layers=1,
    d_model=16,
    num_heads=2,
    dff=32,
    batch_size=32,
    max_length=24,
    warmup_steps=10,
)


def test_bad_settings_fail_before_the_run_directory_exists(tmp_path):
    out = tmp_path / "run"
    with pytest.raises(ValueError, match="vocab_size=1"):
        train(TrainConfig(out=str(out), vocab_size=1, **TINY))
    assert not out.exists()


@pytest.fixture(scope="module")
def resumed_run(tmp_path_factory):
    """A run stopped while plotting (here: an error), then the same run again: what the stop
    left, and the finished run (one run shared by the tests below)."""
    out = tmp_path_factory.mktemp("run_writes") / "run"

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt("stopped while plotting")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run_module, "plot_run_curves", stopped)
        with pytest.raises(KeyboardInterrupt):
            train(TrainConfig(out=str(out), **TINY))
    left = {"model.keras": (out / "model.keras").exists()}
    left["metrics.json"] = (out / "metrics.json").exists()
    metrics = train(TrainConfig(out=str(out), **TINY))
    return out, left, metrics


def test_a_failing_overwrite_leaves_the_finished_run_as_it_was(resumed_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(resumed_run[0], out)  # a finished run of its own
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(ValueError, match="vocab_size=1"):
        train(TrainConfig(out=str(out), vocab_size=1, overwrite=True, **TINY))
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


def test_metrics_json_is_written_after_the_plots(resumed_run):
    """A stop while plotting leaves no completion marker, so the same command resumes the run
    instead of taking it as finished."""
    out, left, metrics = resumed_run
    assert left == {"model.keras": True, "metrics.json": False}
    assert json.loads((out / "metrics.json").read_text()) == json.loads(json.dumps(metrics))
    assert (out / "plots" / "history.png").exists()


def test_a_ten_pair_tsv_trains_with_a_warning(tmp_path):
    data = tmp_path / "pairs.tsv"
    data.write_text("".join(f"w{i} v{i}\tt{i} u{i}\n" for i in range(10)), encoding="utf-8")
    config = TrainConfig(
        task="tsv",
        data=str(data),
        out=str(tmp_path / "run"),
        epochs=1,
        num_layers=1,
        d_model=16,
        num_heads=2,
        dff=32,
        max_length=16,
        warmup_steps=10,
    )
    with pytest.warns(UserWarning) as caught:
        metrics = train(config)
    messages = " ".join(str(w.message) for w in caught)
    assert "only 10 distinct sources" in messages and "incomplete batches" in messages
    assert metrics["num_test"] == 1 and (tmp_path / "run" / "model.keras").exists()
    # config.json names the task's sides, not the --target-lang default of --task numbers
    recorded = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    assert (recorded["source_lang"], recorded["target_lang"]) == ("source", "target")
