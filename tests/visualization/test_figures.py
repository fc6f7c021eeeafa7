"""The figures of a run: history parsing and PNG files with the expected content."""

import matplotlib.image
import numpy as np
import pytest

from keras_transformer.training import TransformerSchedule
from keras_transformer.visualization import figures as plots


def test_read_history_parses_csv_logger_columns(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss,val_loss\n0,2.5,2.0\n1,1.5,1.25\n")
    assert plots.read_history(path) == {
        "epoch": [0.0, 1.0],
        "loss": [2.5, 1.5],
        "val_loss": [2.0, 1.25],
    }


def test_figures_are_written_as_images(tmp_path):
    history = {
        "loss": [3.0, 2.0, 1.0],
        "val_loss": [3.5, 2.5, 2.0],
        "masked_accuracy": [0.1, 0.5, 0.9],
    }
    for path in (
        plots.plot_history(history, tmp_path / "h.png"),
        plots.plot_schedule(TransformerSchedule(16, 10), 50, tmp_path / "lr.png"),
        plots.plot_attention(
            np.random.default_rng(0).random((3, 2, 4)),
            ["a", "b"],
            ["w", "x", "y", "z"],
            tmp_path / "att.png",
        ),
        plots.plot_attention(
            np.random.default_rng(1).random((1, 2, 3)),
            ["b", "[END]"],
            ["[START]", "w", "[END]"],
            tmp_path / "att_labelled.png",
            query_label="predicted token",
            key_label="source token",
        ),
    ):
        image = matplotlib.image.imread(path)
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        assert image[..., :3].std() > 0.05  # not a blank canvas


@pytest.mark.parametrize(
    "front, home",
    [
        ("keras_transformer.plots", "keras_transformer.visualization.figures"),
        ("keras_transformer.attention_page", "keras_transformer.visualization.attention_page"),
    ],
)
def test_documented_import_paths_offer_every_public_name_of_the_moved_module(front, home):
    """`kt.plots` (docs/api, tutorials 07 and 12, `kt.analysis.plots`) and
    `keras_transformer.attention_page` (tutorials 07 and 12) stay importable after the move to
    `visualization/`: each re-exports every public function and constant of its new home, so a
    name added there and forgotten here fails."""
    import importlib
    import inspect

    import keras_transformer as kt

    front_module, home_module = importlib.import_module(front), importlib.import_module(home)
    public = {
        name
        for name, value in vars(home_module).items()
        if not name.startswith("_") and (inspect.getmodule(value) is home_module or name.isupper())
    }
    assert set(front_module.__all__) == public
    assert all(getattr(front_module, name) is getattr(home_module, name) for name in public)
    assert kt.analysis.plots is kt.plots


def test_importing_the_package_and_plotting_leave_matplotlib_alone(tmp_path):
    """`import keras_transformer` imports neither matplotlib nor TensorFlow; a figure
    written by the package leaves pyplot's backend and figures as they were."""
    import subprocess
    import sys

    code = (
        "import sys, keras_transformer as kt\n"
        "print('matplotlib' in sys.modules, 'tensorflow' in sys.modules)\n"
        "import matplotlib\n"
        "matplotlib.use('svg')\n"
        "import matplotlib.pyplot as plt\n"
        f"kt.plots.plot_history({{'loss': [2.0, 1.0]}}, {str(tmp_path / 'h.png')!r})\n"
        "print(matplotlib.get_backend(), plt.get_fignums())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "svg", "[]"]
    assert (tmp_path / "h.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "shape, queries, keys",
    [
        # Tutorial 12's map from "it": one row, fourteen columns; "[START]" was cut to "TART]".
        (
            (2, 1, 14),
            ["layer 0: it"],
            "[START] The runner didn't cross the street since it was so sleepy . [END]".split(),
        ),
        # Tutorial 07's cross-attention: a long German piece on the rows.
        (
            (4, 6, 6),
            ["d", "##r", "##e", "##i", "##hundertvierundzwanzig", "[END]"],
            ["[START]", "three", "hundred", "and", "twenty-four", "[END]"],
        ),
        ((3, 2, 4), ["a", "b"], ["w", "x", "y", "z"]),
    ],
)
def test_attention_tick_labels_lie_inside_the_figure(tmp_path, monkeypatch, shape, queries, keys):
    """Every token label, title and axis name of `plot_attention` is drawn inside the image,
    and the figure stays near a page column's width (at most 7.5 inches at 100 dpi)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    drawn = {}
    save = plots.save

    def keep(fig, path, **layout):
        drawn["fig"] = fig
        return save(fig, path, **layout)

    monkeypatch.setattr(plots, "save", keep)
    weights = np.random.default_rng(0).random(shape)
    plots.plot_attention(
        weights,
        queries,
        keys,
        tmp_path / "a.png",
        title="encoder attention from 'it': \"The runner didn't cross the street since it was so "
        'sleepy ."',
        query_label="predicted token",
        key_label="source token",
    )
    fig = drawn["fig"]
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    texts = [fig._suptitle]  # the figure's title (matplotlib keeps it there)
    for ax in fig.axes:
        texts += [*ax.get_xticklabels(), *ax.get_yticklabels(), ax.title, ax.xaxis.label]
        texts += [ax.yaxis.label]
    outside = []
    for text in texts:
        box = text.get_window_extent(renderer)
        if text.get_text() and (box.x0 < 0 or box.y0 < 0 or box.x1 > width or box.y1 > height):
            outside.append(text.get_text())
    assert not outside, f"labels cut at the figure's edge: {outside}"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == keys
    assert fig.get_size_inches()[0] <= 7.5
