"""Coreference data folders in LitBank's layout (train/, dev/, optional test/ of ``*.conll``):
reading, the variant reported, missing splits (never the Hub), long evaluation documents, response
files for tab-separated keys, and the real LitBank folder (skipped without ../shared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.common.io import DataError, ReadStats
from tasks.coref import data as coref_data
from tasks.coref.data import LAYOUTS, load_split, load_splits, split_files
from tasks.coref.evaluate import evaluate_files, write_document_response
from tests.conftest import shared_path
from tests.tasks.helpers import write_lines


def _row(doc: str, index: int, word: str, coref: str = "") -> str:
    return "\t".join([doc, "0", str(index), word, *["_"] * 8, coref])


def _document(doc: str, sentences: int = 1) -> list[str]:
    """``sentences`` copies of "Anna saw Bob . She" (Anna ... She one chain, Bob a singleton)."""
    lines = [f"#begin document ({doc}); part 0"]
    for k in range(sentences):
        tags = [("Anna", "(0)"), ("saw", ""), ("Bob", f"({k + 1})"), (".", ""), ("She", "(0)")]
        lines += [_row(doc, 5 * k + i, word, tag) for i, (word, tag) in enumerate(tags)]
        lines.append("")
    return [*lines, "#end document"]


def _folder(root: Path, splits: dict[str, int], sentences: int = 1) -> Path:
    """A LitBank-style folder: ``split/ → number of documents``."""
    for split, count in splits.items():
        (root / split).mkdir(parents=True)
        for n in range(count):
            write_lines(root / split / f"{n}_novel_brat.conll", _document(f"{n}_novel", sentences))
    return root


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object) -> Path:
        raise AssertionError("the Hub was consulted")

    monkeypatch.setattr(coref_data, "_hub_split", fail)


def test_litbank_folder_with_test(tmp_path: Path, no_hub: None) -> None:
    folder = _folder(tmp_path / "lb", {"train": 3, "dev": 2, "test": 1})
    splits, stats = load_splits(folder, None)
    assert {s: len(d) for s, d in splits.items()} == {"train": 3, "dev": 2, "test": 1}
    doc = splits["dev"][0]
    assert doc.document_id == "0_novel" and doc.genre == "0_novel"
    assert doc.clusters == (((0, 0), (4, 4)), ((2, 2),))
    assert doc.path.endswith("dev/0_novel_brat.conll")
    dev = stats["dev"]
    assert dev.examples == 2 and dev.source == f"{folder / 'dev'}/"
    assert dev.variant == (
        "LitBank layout: dev/ folder of 2 *.conll files, tab-separated, '_' placeholders, "
        "empty coreference field = no mention, 2 documents, 6 mentions in 4 chains, "
        "2 singleton chains (scored as the reference scorer does: in B3 and CEAF-e, not in MUC)"
    )
    assert "LitBank layout: dev/" in dev.summary("dev")


def test_litbank_folder_without_test(tmp_path: Path, no_hub: None) -> None:
    folder = _folder(tmp_path / "lb", {"train": 2, "dev": 1})
    splits, stats = load_splits(folder, None)
    assert set(splits) == {"train", "dev"} and stats["test"].examples == 0
    assert split_files(folder, "test") == []
    names = [p.name for p in split_files(folder, "train")]
    assert names == ["0_novel_brat.conll", "1_novel_brat.conll"]


@pytest.mark.parametrize("present", [{"train": 1}, {"dev": 1, "test": 1}, {}])
def test_missing_train_or_dev_is_an_error(
    tmp_path: Path, no_hub: None, present: dict[str, int]
) -> None:
    folder = _folder(tmp_path / "lb", present)
    folder.mkdir(exist_ok=True)
    missing = "train" if "train" not in present else "dev"
    with pytest.raises(DataError) as info:
        load_splits(folder, None)
    assert info.value.path == str(folder) and f"no {missing} split" in info.value.reason
    assert all(layout in info.value.reason for layout in LAYOUTS)
    assert "Hugging Face Hub is not consulted" in info.value.reason


def test_hub_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = write_lines(tmp_path / "hub.gold_conll", _document("nw/hub"))
    monkeypatch.setattr(coref_data, "_hub_split", lambda split, folder, cache: key)
    with pytest.raises(DataError, match="no dev split"):
        load_split("dev", tmp_path / "nothing")
    stats = ReadStats()
    (doc,) = load_split("dev", tmp_path / "nothing", stats, hub=True)
    assert doc.document_id == "nw/hub" and stats.variant.startswith("Hugging Face Hub")


def test_length_limit_applies_to_training_documents_only(tmp_path: Path, no_hub: None) -> None:
    folder = _folder(tmp_path / "lb", {"train": 1, "dev": 1, "test": 1}, sentences=3)
    splits, _ = load_splits(folder, 20)  # every document has 15 tokens
    assert [len(splits[s]) for s in ("train", "dev", "test")] == [1, 1, 1]
    with pytest.raises(DataError, match="max_document_tokens=10"):
        load_splits(folder, 10)  # training documents longer than the limit are refused
    long_eval = _folder(tmp_path / "long", {"train": 1, "dev": 1}, sentences=1)
    write_lines(long_eval / "dev" / "0_novel_brat.conll", _document("0_novel", sentences=4))
    splits, _ = load_splits(long_eval, 6)
    assert splits["dev"][0].num_tokens == 20  # dev is never refused for its length


def test_response_for_a_tab_separated_key(tmp_path: Path, no_hub: None) -> None:
    folder = _folder(tmp_path / "lb", {"train": 1, "dev": 1})
    (doc,) = load_split("dev", folder)
    response, key = tmp_path / "r.response_conll", tmp_path / "r.key_conll"
    gold = [list(cluster) for cluster in doc.clusters]
    write_document_response([(doc.path, doc.key, doc.num_tokens)], {doc.key: gold}, response, key)
    key_lines = key.read_text(encoding="utf-8").splitlines()
    response_lines = response.read_text(encoding="utf-8").splitlines()
    assert key_lines == _document("0_novel")
    # every column but the last is kept; the last holds the encoded response
    for key_line, response_line in zip(key_lines, response_lines, strict=True):
        if "\t" in key_line:
            assert response_line.split("\t")[:-1] == key_line.split("\t")[:-1]
    assert response_lines[2].split("\t")[-1] == "-" and response_lines[1].endswith("\t(0)")
    score, _ = evaluate_files(key, response)
    assert score.conll_f1 == pytest.approx(1.0) and score.b_cubed.f1 == pytest.approx(1.0)


@pytest.mark.shared
def test_real_litbank_folder_reads() -> None:
    folder = shared_path("data", "real", "litbank-coref")
    splits, stats = load_splits(folder, None)
    assert set(splits) == {"train", "dev"}  # the test split is held back
    assert [len(splits[s]) for s in ("train", "dev")] == [80, 10]
    # counts of ../shared/data/real/README.md
    assert sum(d.num_tokens for d in splits["train"]) == 168_657
    assert sum(d.num_tokens for d in splits["dev"]) == 21_018
    assert sum(len(c) for d in splits["train"] for c in d.clusters) == 23_127
    assert sum(len(c) for d in splits["dev"] for c in d.clusters) == 2_842
    for split in ("train", "dev"):
        variant = stats[split].variant
        assert variant.startswith(f"LitBank layout: {split}/ folder of ")
        assert "tab-separated, '_' placeholders, empty coreference field = no mention" in variant
        assert "singleton chains" in variant and stats[split].describe() == "none"
