"""The SRL reader: instances from CoNLL-2012 (one BIO instance per predicate, C-/R- labels kept),
split folders, bad input, the length limit and the Hugging Face fallback."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from tasks.common.io import DataError, ReadStats
from tasks.srl import data
from tasks.srl.data import (
    SrlNotAvailable,
    hf_sentences,
    load_split_sentences,
    read_srl,
    split_files,
    srl_instances,
)
from tests.conftest import shared_path
from tests.tasks.helpers import write_lines

SRL_DIR = ("fixtures", "formats", "structured_prediction", "srl", "conll_2012")
COREF = ("fixtures", "formats", "coref", "coref.gold_conll")


@pytest.mark.shared
def test_instances_from_the_srl_samples() -> None:
    stats = ReadStats()
    instances = list(read_srl(shared_path(*SRL_DIR), stats))
    # predicates per sentence 2, 2, 0, 2 (subdomain) and 2 (subdomain2)
    assert len(instances) == stats.examples == 8
    assert dict(stats.skipped) == {"no_predicate_sentence": 1}
    assert [i.sentence_id for i in instances] == [0, 0, 1, 1, 3, 3, 4, 4]
    first = instances[0]
    assert first.predicate_index == 3 and first.tokens[3] == "say" and first.genre == "bn"
    assert first.tags == (
        "B-ARG0", "I-ARG0", "I-ARG0", "B-V", "B-ARG1", "I-ARG1", "I-ARG1", "I-ARG1", "I-ARG1",
        "I-ARG1", "O",
    )  # fmt: skip


@pytest.mark.shared
def test_continuation_and_reference_labels_are_kept() -> None:
    tags = {tag for instance in read_srl(shared_path(*COREF)) for tag in instance.tags}
    assert {"B-C-ARG1", "B-R-ARG1", "B-ARGM-TMP", "B-V"} <= tags


SENTENCE = [
    "#begin document (nw/x/00/x_0000); part 000",
    "nw/x 0 0 John NNP * - - - - * (ARG0*) -",
    "nw/x 0 1 saw VBD * see 01 - - * (V*) -",
    "nw/x 0 2 Mary NNP * - - - - * (ARG1*) -",
    "",
    "#end document",
]


def _folder(root: Path, split: str, lines: list[str], name: str = "a.v4_gold_conll") -> Path:
    folder = root / "conll-2012" / "v4" / "data" / split / "data" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    return write_lines(folder / name, lines)


def test_split_folders_read_gold_files_only(tmp_path: Path) -> None:
    _folder(tmp_path, "train", SENTENCE)
    _folder(tmp_path, "train", SENTENCE[:2] + ["broken"], name="a.v4_auto_conll")  # ignored
    _folder(tmp_path, "development", SENTENCE)
    files = split_files(tmp_path, "train")
    assert files is not None and [f.name for f in files] == ["a.v4_gold_conll"]
    sentences = load_split_sentences(tmp_path, "dev")
    assert [s.words for s in sentences] == [("John", "saw", "Mary")]
    assert split_files(tmp_path, "test") is None  # → the Hugging Face fallback
    with pytest.raises(ValueError, match="unknown split"):
        split_files(tmp_path, "validation")


def test_empty_split_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "train").mkdir()
    with pytest.raises(DataError, match="no \\*gold_conll"):
        split_files(tmp_path, "train")


def test_unclosed_argument_bracket_names_the_file_and_line(tmp_path: Path) -> None:
    bad = [*SENTENCE]
    bad[3] = "nw/x 0 2 Mary NNP * - - - - * (ARG1* -"  # ARG1 opened, never closed
    path = _folder(tmp_path, "train", bad)
    with pytest.raises(DataError) as info:
        load_split_sentences(tmp_path, "train")
    assert info.value.path == str(path) and info.value.line == 4
    assert "never closed" in info.value.reason


def test_sentences_over_the_length_limit_are_counted(tmp_path: Path) -> None:
    _folder(tmp_path, "train", SENTENCE)
    sentences = load_split_sentences(tmp_path, "train")
    stats = ReadStats()
    assert list(srl_instances(sentences, stats, max_length=2)) == []
    assert dict(stats.skipped) == {"sentence_too_long": 1}
    assert len(list(srl_instances(sentences, ReadStats(), max_length=3))) == 1


def test_hugging_face_rows_become_sentences() -> None:
    rows = [
        {
            "document_id": "bn/abc/00/abc_0001",
            "sentences": [
                {
                    "part_id": 0,
                    "words": ["John", "saw", "Mary", "."],
                    "srl_frames": [
                        {"verb": "saw", "frames": ["B-ARG0", "B-V", "B-ARG1", "O"]},
                    ],
                },
                {"part_id": 0, "words": ["Hello"], "srl_frames": []},
            ],
        }
    ]
    sentences = hf_sentences("train", rows=rows)
    assert len(sentences) == 2 and sentences[0].srl_frames[0].predicate_index == 1
    stats = ReadStats()
    (instance,) = srl_instances(sentences, stats)
    assert instance.tags == ("B-ARG0", "B-V", "B-ARG1", "O")
    assert stats.skipped["no_predicate_sentence"] == 1
    rows[0]["sentences"][0]["srl_frames"][0]["frames"] = ["O"]  # type: ignore[index]
    with pytest.raises(DataError, match="1 tags for 4 words"):
        hf_sentences("train", rows=rows)


def test_offline_without_split_folders_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def offline(*args: object, **kwargs: object) -> None:
        raise ConnectionError("no network")

    monkeypatch.setattr(
        data, "require_datasets", lambda: types.SimpleNamespace(load_dataset=offline)
    )
    with pytest.raises(SrlNotAvailable, match="development/ and test/ holding \\*gold_conll"):
        load_split_sentences(tmp_path, "dev")
