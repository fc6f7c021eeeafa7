"""The spa_eng loader, offline: a generated zip in the layout of spa-eng.zip, served by file://."""

import zipfile

import keras
import pytest

from keras_transformer.data import load_task
from keras_transformer.data.tasks import spa_eng


@pytest.fixture
def fake_origin(tmp_path, monkeypatch):
    """A spa-eng.zip of generated sentences (no third-party text) as the download origin."""
    lines = [f"I have {i} cats.\tTengo {i} gatos.\tCC-BY 2.0 (France) #{i}" for i in range(40)]
    archive = tmp_path / "origin" / "spa-eng.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("spa-eng/_about.txt", "generated for a test\n")
        handle.writestr("spa-eng/spa.txt", "\n".join(lines) + "\n")
    monkeypatch.setattr(spa_eng, "ORIGIN", archive.as_uri())
    return tmp_path / "cache"


def test_spa_eng_downloads_extracts_and_splits_on_request(fake_origin):
    task = load_task("spa_eng", cache_dir=str(fake_origin), seed=0)
    assert (task.name, task.source_lang, task.target_lang) == ("spa_eng", "en", "es")
    assert len(task.train) + len(task.validation) + len(task.test) == 40
    assert (len(task.validation), len(task.test)) == (6, 6)  # keras-io's 15 % each
    assert ("I have 3 cats.", "Tengo 3 gatos.") in task.train + task.validation + task.test
    assert list(fake_origin.rglob("spa.txt"))  # cached where asked: a second load reads it
    swapped = load_task("spa_eng", cache_dir=str(fake_origin), columns="2,1")
    assert (swapped.source_lang, swapped.train[0][0].startswith("Tengo")) == ("es", True)


def test_nothing_is_downloaded_unless_spa_eng_is_asked_for(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("get_file called")

    monkeypatch.setattr(keras.utils, "get_file", refuse)
    load_task("numbers", num_train=5, num_validation=2, num_test=2)
    with pytest.raises(AssertionError, match="get_file called"):
        load_task("spa_eng")


def test_an_archive_without_spa_txt_says_what_to_do(tmp_path):
    (tmp_path / "spa-eng").mkdir()
    with pytest.raises(FileNotFoundError, match="no spa.txt.*delete it"):
        spa_eng.find_corpus_file(tmp_path)
