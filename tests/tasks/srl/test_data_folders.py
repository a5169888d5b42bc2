"""SRL data folders other than the full CoNLL-2012 release: train and development (or dev) only,
the test split absent, never the Hugging Face Hub, and the real PropBank WSJ sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.srl import data
from tasks.srl.data import SrlNotAvailable, load_splits
from tasks.srl.task import setup
from tests.conftest import shared_path
from tests.tasks.helpers import write_lines

TINY = ("word_vectors=random:4", "hidden=4", "layers=2", "predicate_dim=2")
WSJ = ("data", "english", "annotations", "nw", "wsj", "00")

SHORT = [
    "nw/x 0 0 John NNP * - - - - * (ARG0*) -",
    "nw/x 0 1 saw VBD * see 01 - - * (V*) -",
    "nw/x 0 2 Mary NNP * - - - - * (ARG1*) -",
]
LONG = [
    "nw/x 0 0 The DT * - - - - * (ARG0* -",
    "nw/x 0 1 old JJ * - - - - * * -",
    "nw/x 0 2 man NN * - - - - * *) -",
    "nw/x 0 3 saw VBD * see 01 - - * (V*) -",
    "nw/x 0 4 Mary NNP * - - - - * (ARG1*) -",
    "nw/x 0 5 . . * - - - - * * -",
]
NO_PREDICATE = ["nw/x 0 0 Hello UH * - - - - * -"]


def _document(*sentences: list[str]) -> list[str]:
    lines = ["#begin document (nw/wsj/00/wsj_0001); part 000"]
    for sentence in sentences:
        lines += [*sentence, ""]
    return [*lines, "#end document"]


def _split(
    root: Path, folder: str, *sentences: list[str], name: str = "wsj_0001.v4_gold_conll"
) -> Path:
    target = root.joinpath(folder, *WSJ)
    target.mkdir(parents=True, exist_ok=True)
    return write_lines(target / name, _document(*sentences))


@pytest.mark.usefixtures("no_hub")
def test_the_conll_formatted_ontonotes_release_layout(tmp_path: Path) -> None:
    """He et al.'s / allennlp's ``conll-formatted-ontonotes-5.0/data/{train,development,
    conll-2012-test}`` with ``*.gold_conll`` files beside ``*.gold_skel`` ones: the test split is
    ``conll-2012-test/``, never the release's larger v12 ``test/`` beside it."""
    data_dir = tmp_path / "conll-formatted-ontonotes-5.0" / "data"
    release = {"name": "wsj_0001.gold_conll"}
    _split(data_dir, "train", SHORT, LONG, **release)
    _split(data_dir, "development", LONG, **release)
    _split(data_dir, "conll-2012-test", SHORT, **release)
    _split(data_dir, "test", SHORT, SHORT, LONG, **release)  # the v12 test set: not read
    skeleton = data_dir.joinpath("train", *WSJ, "wsj_0001.gold_skel")
    write_lines(skeleton, ["not a CoNLL file"])  # would raise DataError if read
    for given in (tmp_path, data_dir):
        sentences, instances, stats = load_splits(given, None)
        assert {s: len(i) for s, i in sentences.items()} == {"train": 2, "dev": 1, "test": 1}
        assert {s: len(i) for s, i in instances.items()} == {"train": 2, "dev": 1, "test": 1}
        assert stats["test"].source.endswith(
            "conll-2012-test/" + "/".join(WSJ) + "/wsj_0001.gold_conll"
        )
        assert "conll-2012-test/: 1 *gold_conll file, 1 sentences" in stats["test"].variant


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach the Hugging Face Hub fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the Hugging Face Hub was called")

    monkeypatch.setattr(data, "require_datasets", refuse)
    monkeypatch.setattr(data, "hf_sentences", refuse)


@pytest.mark.usefixtures("no_hub")
def test_train_and_development_without_test_read_without_the_hub(tmp_path: Path) -> None:
    train = _split(tmp_path, "train", SHORT, NO_PREDICATE, LONG)
    _split(tmp_path, "development", LONG)
    sentences, instances, stats = load_splits(tmp_path, None)
    assert set(sentences) == set(instances) == set(stats) == {"train", "dev"}
    assert [len(sentences[s]) for s in ("train", "dev")] == [3, 1]
    assert [len(instances[s]) for s in ("train", "dev")] == [2, 1]
    assert stats["train"].source == str(train)
    assert stats["train"].variant == (
        "CoNLL-2012 folders train/, development/, test split absent; "
        "train/: 1 *gold_conll file, 3 sentences, 2 predicates"
    )
    assert stats["dev"].variant.endswith(
        "development/: 1 *gold_conll file, 1 sentences, 1 predicates"
    )
    assert dict(stats["train"].skipped) == {"no_predicate_sentence": 1}


@pytest.mark.usefixtures("no_hub")
def test_a_dev_folder_is_the_development_split(tmp_path: Path) -> None:
    _split(tmp_path, "train", SHORT)
    _split(tmp_path, "dev", SHORT)
    _split(tmp_path, "test", SHORT, SHORT)
    _, instances, stats = load_splits(tmp_path, None)
    assert {s: len(i) for s, i in instances.items()} == {"train": 1, "dev": 1, "test": 2}
    assert stats["dev"].variant.startswith("CoNLL-2012 folders train/, dev/, test/; dev/: ")


@pytest.mark.usefixtures("no_hub")
@pytest.mark.parametrize("present", ["train", "development"])
def test_a_missing_train_or_dev_folder_names_the_folder_and_the_layouts(
    tmp_path: Path, present: str
) -> None:
    _split(tmp_path, present, SHORT)
    wanted = "development/ or dev/" if present == "train" else "train/"
    with pytest.raises(SrlNotAvailable) as info:
        load_splits(tmp_path, None)
    message = str(info.value)
    assert f"no {wanted} folder in or below {tmp_path}" in message
    assert "Accepted layouts: the conll-2012/v4/data folder" in message
    assert "train/ and development/ (or dev/)" in message and "test/ optional" in message


@pytest.mark.usefixtures("no_hub")
def test_a_folder_that_does_not_exist_is_an_error_not_a_download(tmp_path: Path) -> None:
    with pytest.raises(SrlNotAvailable, match="no train/ folder in or below .*no such folder"):
        load_splits(tmp_path / "missing", None)


@pytest.mark.usefixtures("no_hub")
def test_the_recipe_has_no_test_split_and_keeps_long_dev_sentences(tmp_path: Path) -> None:
    _split(tmp_path, "train", SHORT, LONG)
    _split(tmp_path, "development", LONG, SHORT)
    recipe = setup("mini", (*TINY, "max_length=3"), str(tmp_path))
    assert set(recipe.splits) == set(recipe.read_stats) == {"train", "dev"}
    assert len(recipe.splits["train"]) == 1  # the 6-token training sentence is skipped
    assert recipe.stats["train"].skipped["sentence_too_long"] == 1
    assert "sentence_too_long" in recipe.stats["train"].exempt
    assert len(recipe.splits["dev"]) == 2 and not recipe.stats["dev"].skipped
    assert "test split absent" in recipe.read_stats["dev"].summary("dev")


@pytest.mark.shared
@pytest.mark.usefixtures("no_hub")
def test_the_propbank_wsj_sample_reads_in_place() -> None:
    folder = shared_path("data", "real", "propbank-srl")
    sentences, instances, stats = load_splits(folder, None)
    assert set(sentences) == {"train", "dev"}
    counts = {s: (len(sentences[s]), len(instances[s])) for s in sentences}
    assert counts == {"train": (2458, 7631), "dev": (272, 840)}
    assert stats["train"].variant == (
        "CoNLL-2012 folders train/, development/, test split absent; "
        "train/: 115 *gold_conll files, 2,458 sentences, 7,631 predicates"
    )
    assert stats["dev"].variant.endswith(
        "development/: 14 *gold_conll files, 272 sentences, 840 predicates"
    )
    assert stats["dev"].source == f"{folder / 'development'}/**/*gold_conll"
    _, mini, _ = load_splits(folder, 60)  # the mini preset's limit cuts training only
    assert len(mini["dev"]) == 840 and len(mini["train"]) < 7631
