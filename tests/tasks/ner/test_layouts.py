"""The data folder layouts the NER / tagging task reads (tasks.ner.data.ACCEPTED_LAYOUTS), what
the reader reports about them (ReadStats.variant), their errors, and the two real sets read in
place from ../shared (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.common.io import DataError, ReadStats
from tasks.common.spans import Scheme
from tasks.ner import data as ner_data
from tasks.ner.data import Splits, encode_splits, find_layout, load_splits, read_columns
from tasks.ner.demo import ensure_demo
from tasks.ner.task import TASK, setup
from tests.conftest import shared_path
from tests.tasks.helpers import write_lines

TINY = ("word_vectors=random:4", "hidden=[4,3]", "char_filters=4")
NER = [["EU NNP B-ORG", "rejects VBZ O", "German JJ B-MISC"], ["Peter NNP B-PER", "said VBD O"]]
LITBANK = [  # word, then four BIO layers (outermost first), each line ending in a tab
    ["The\tB-PER\tO\tO\tO\t", "lord\tI-PER\tB-PER\tO\tO\t", "came\tO\tO\tO\tO\t"],
    ["London\tB-GPE\tO\tO\tO\t", ".\tO\tO\tO\tO\t"],
]


def _write(path: Path, sentences: list[list[str]], head: tuple[str, ...] = ()) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = list(head)
    for sentence in sentences:
        lines += [*sentence, ""]
    return write_lines(path, lines)


def _read(folder: Path, *overrides: str) -> tuple[Splits, dict[str, ReadStats], Scheme | None]:
    """Splits, statistics and scheme as the task's setup reads them (no vocabulary built)."""
    config = TASK.configure("mini", overrides)
    raw, stats = load_splits(config, str(folder), ensure_demo)
    splits, scheme, _ = encode_splits(raw, config, stats)
    return splits, stats, scheme


def test_split_folders_of_conll_and_txt_files_without_test(tmp_path: Path) -> None:
    _write(tmp_path / "train" / "b.conll", NER)
    _write(tmp_path / "train" / "a.txt", NER[:1])
    _write(tmp_path / "dev" / "c.conll", NER[1:])
    (tmp_path / "train" / "README.md").write_text("not data\n")
    splits, stats, scheme = _read(tmp_path)
    assert set(splits) == {"train", "dev"} and scheme == "IOB2"  # no test split: allowed
    assert [len(splits[s]) for s in ("train", "dev")] == [3, 1]
    assert [Path(ex.path).name for ex in splits["train"]] == ["a.txt", "b.conll", "b.conll"]
    variant = stats["train"].variant
    assert "train/ folder of 2 *.conll/*.txt files" in variant and "3 columns" in variant
    assert "tag column -1 (the last column)" in variant and "IOB2 (detected from train)" in variant
    assert stats["dev"].source == str(tmp_path / "dev")
    recipe = setup("mini", TINY, str(tmp_path))
    assert "test" not in recipe.splits and recipe.splits["dev"][0].tags == ("U-PER", "O")


def test_litbank_tsv_reads_the_outermost_layer(tmp_path: Path) -> None:
    _write(tmp_path / "train" / "1_book_brat.tsv", LITBANK)
    _write(tmp_path / "dev" / "2_book_brat.tsv", LITBANK[:1])
    splits, stats, scheme = _read(tmp_path)
    assert splits["train"][0].tokens == ("The", "lord", "came")  # the trailing tab is no column
    assert splits["train"][0].tags == ("B-PER", "L-PER", "O") and scheme == "IOB2"
    variant = stats["train"].variant
    assert variant.startswith("LitBank entities layout: train/ folder of 1 *.tsv files")
    assert "tab-separated, word + 4 BIO layers" in variant
    assert "tag column 1 (the outermost entity layer)" in variant
    inner, inner_stats, _ = _read(tmp_path, "tag_column=2")
    assert inner["train"][0].tags == ("O", "U-PER", "O")
    assert "tag column 2 (--set tag_column)" in inner_stats["train"].variant


def test_tab_separated_words_keep_their_spaces_and_empty_fields_are_errors(
    tmp_path: Path,
) -> None:
    path = write_lines(tmp_path / "a.tsv", ["New York\tB-GPE\tO", "is\tO\tO", "", "a\t\tO"])
    sentences = read_columns(path, 1)
    with pytest.raises(DataError) as info:
        list(sentences)
    assert (info.value.line, info.value.reason) == (4, "column 1 is empty (tab-separated file)")
    first = next(iter(read_columns(path, 1)))
    assert first.tokens == ("New York", "is") and first.tags == ("B-GPE", "O")


def test_conll2002_spanish_and_dutch_files(tmp_path: Path) -> None:
    spanish = [["Sao B-LOC", "Paulo I-LOC", "( O"], ["Brasil B-LOC"]]
    for name in ("esp.train", "esp.testa", "esp.testb"):
        _write(tmp_path / "esp" / name, spanish)
    splits, stats, scheme = _read(tmp_path / "esp")
    assert scheme == "IOB2" and [len(splits[s]) for s in ("train", "dev", "test")] == [2, 2, 2]
    assert "esp.testa (CoNLL-2002 Spanish files)" in stats["dev"].variant
    assert "2 columns" in stats["dev"].variant and "-DOCSTART- absent" in stats["dev"].variant
    dutch = [["De Art O", "Belg N B-MISC"], ["Gent N B-LOC"]]
    doc = ("-DOCSTART- -DOCSTART- O", "")
    _write(tmp_path / "ned" / "ned.train", dutch + dutch, doc)
    _write(tmp_path / "ned" / "ned.testa", dutch, doc)
    splits, stats, scheme = _read(tmp_path / "ned")
    assert [len(splits[s]) for s in ("train", "dev")] == [4, 2] and scheme == "IOB2"
    assert all("-DOCSTART-" not in ex.tokens for ex in splits["train"])
    assert "CoNLL-2002 Dutch files" in stats["train"].variant
    assert "3 columns, -DOCSTART- present (1)" in stats["train"].variant


def test_a_folder_of_several_layouts_needs_a_choice(tmp_path: Path) -> None:
    for name in ("esp.train", "esp.testa", "ned.train", "ned.testa"):
        _write(tmp_path / name, NER)
    with pytest.raises(DataError, match=r"several layouts \(esp, ned\); .*--set layout=esp\|ned"):
        _read(tmp_path)
    splits, stats, _ = _read(tmp_path, "layout=ned")
    assert stats["train"].source == str(tmp_path / "ned.train") and len(splits["dev"]) == 2
    with pytest.raises(FileNotFoundError, match=r"no training split \(layout=eng\)"):
        _read(tmp_path, "layout=eng")


def test_a_byte_order_mark_does_not_make_docstart_a_sentence(tmp_path: Path) -> None:
    for name in ("train.txt", "dev.txt"):
        path = _write(tmp_path / name, NER, ("-DOCSTART- -X- O", ""))
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    splits, stats, _ = _read(tmp_path)
    assert len(splits["train"]) == 2 and splits["train"][0].tokens[0] == "EU"
    assert "byte-order mark stripped (1 file), -DOCSTART- present (1)" in stats["dev"].variant


def test_a_missing_column_is_a_located_error(tmp_path: Path) -> None:
    _write(tmp_path / "train.txt", [["EU NNP B-ORG", "rejects O", "it PRP O"]])
    _write(tmp_path / "dev.txt", NER)
    with pytest.raises(DataError) as info:
        _read(tmp_path)
    assert (info.value.path, info.value.line) == (str(tmp_path / "train.txt"), 2)
    assert "2 columns, but the first token line of the file (line 1) has 3" in info.value.reason


def test_missing_splits_name_the_folder_and_the_layouts(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        find_layout(tmp_path)
    assert str(tmp_path) in str(info.value) and "folders train/, dev/, test/" in str(info.value)
    _write(tmp_path / "train" / "a.conll", [*NER, NER[1]])  # every type left after holding out
    _write(tmp_path / "test" / "b.conll", NER)
    with pytest.raises(FileNotFoundError) as info:
        _read(tmp_path)
    message = str(info.value)
    assert message.startswith(f"{tmp_path}: no dev split (looked for a dev/ folder)")
    assert "eng.train" in message and "--set dev_from_train=N" in message
    (tmp_path / "dev").mkdir()
    with pytest.raises(FileNotFoundError, match=r"dev: no column file"):
        _read(tmp_path)
    (tmp_path / "dev").rmdir()
    splits, stats, _ = _read(tmp_path, "dev_from_train=1")
    assert [len(splits[s]) for s in ("train", "dev", "test")] == [2, 1, 2]
    assert stats["dev"].variant.startswith("held out: the last 1 training sentences")


def test_a_data_folder_never_falls_back_to_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_hub() -> None:
        raise AssertionError("the Hugging Face Hub was asked")

    monkeypatch.setattr(ner_data, "require_datasets", no_hub)
    _write(tmp_path / "train.txt", NER)
    with pytest.raises(FileNotFoundError, match="no dev split"):
        _read(tmp_path)
    _write(tmp_path / "dev.txt", NER)
    assert len(_read(tmp_path)[0]["dev"]) == 2


def test_length_limits_skip_training_sentences_only(tmp_path: Path) -> None:
    _write(tmp_path / "train.txt", [*NER, ["EU NNP B-ORG", "German JJ B-MISC"]])
    _write(tmp_path / "dev.txt", NER)
    _write(tmp_path / "test.txt", NER)
    splits, stats, _ = _read(tmp_path, "max_sentence_tokens=2")
    assert [len(splits[s]) for s in ("train", "dev", "test")] == [2, 2, 2]
    assert stats["train"].skipped == {"longer than max_tokens": 1} and stats["train"].examples == 2
    assert stats["train"].skipped_share() == 0.0  # a configured filter: exempt
    assert stats["dev"].skipped == {} and stats["test"].examples == 2


def test_bioes_and_iob1_schemes_are_detected_and_reported(tmp_path: Path) -> None:
    bioes = [["New B-LOC", "York E-LOC", "and O", "Paris S-LOC"], ["Bob S-PER"]]
    _write(tmp_path / "bioes" / "train.txt", bioes)
    _write(tmp_path / "bioes" / "dev.txt", bioes)
    splits, stats, scheme = _read(tmp_path / "bioes")
    assert scheme == "BIOUL" and splits["dev"][0].tags == ("B-LOC", "L-LOC", "O", "U-LOC")
    assert "BIOES (detected from train; E-/S- read as L-/U-)" in stats["dev"].variant
    iob1 = [["EU I-ORG", "says O", "Bonn I-LOC", "Paris B-LOC"]]
    _write(tmp_path / "iob1" / "train.txt", iob1)
    _write(tmp_path / "iob1" / "dev.txt", iob1)
    _, stats, scheme = _read(tmp_path / "iob1")
    assert scheme == "IOB1" and stats["train"].variant.endswith(", IOB1 (detected from train)")


@pytest.mark.shared
def test_real_litbank_entities_folder() -> None:
    folder = shared_path("data", "real", "litbank-entities")
    splits, stats, scheme = _read(folder, "max_sentence_tokens=1000")
    assert {s: len(v) for s, v in splits.items()} == {"train": 7051, "dev": 697}
    assert scheme == "IOB2" and "LitBank entities layout" in stats["train"].variant
    entities = {
        s: sum(tag[0] in "BU" for ex in v for tag in ex.tags) for s, v in splits.items()
    }  # BIOUL: each entity starts with B- or U-
    assert entities == {"train": 9441, "dev": 1247}  # the outermost entities (README)
    mini, mini_stats, _ = _read(folder)  # mini: over-long TRAINING sentences skipped, exempt
    assert len(mini["dev"]) == 697 and mini_stats["train"].skipped_share() == 0.0


@pytest.mark.shared
def test_real_conll2000_folder() -> None:
    folder = shared_path("data", "dev", "conll2000")
    with pytest.raises(FileNotFoundError, match="dev_from_train"):
        _read(folder)
    splits, stats, scheme = _read(folder, "dev_from_train=1000")
    assert {s: len(v) for s, v in splits.items()} == {"train": 7936, "test": 2012, "dev": 1000}
    assert scheme == "IOB2" and sum(len(ex.tokens) for ex in splits["test"]) == 47377
    assert "train.txt (flat files), whitespace-separated, 3 columns" in stats["train"].variant
    assert "--set dev_from_train=1000" in stats["dev"].variant


def test_a_dev_or_test_type_training_never_has_is_refused_at_its_line(tmp_path: Path) -> None:
    _write(tmp_path / "train.txt", NER)
    _write(tmp_path / "dev.txt", [["Anna NNP B-PER", "Berlin NNP I-PRE"]])  # a typo of PER
    with pytest.raises(DataError) as info:
        setup("mini", TINY, str(tmp_path))
    error = info.value
    assert (error.path, error.line) == (str(tmp_path / "dev.txt"), 2)
    assert "dev tag 'I-PRE': entity type 'PRE' never occurs in training" in error.reason
    assert "(training entity types: MISC, ORG, PER)" in error.reason
    _write(tmp_path / "dev.txt", NER[1:])
    _write(tmp_path / "test.txt", [["Peter NNP B-PER"], ["ran VBD O", "home NN B-LOC"]])
    with pytest.raises(DataError, match=r"test\.txt:4: test tag 'B-LOC': entity type 'LOC'"):
        setup("mini", TINY, str(tmp_path))
    (tmp_path / "test.txt").unlink()  # ORG only in a training sentence the length limit skips
    _write(tmp_path / "dev.txt", NER)
    with pytest.raises(DataError, match=r"dev\.txt:1: dev tag 'B-ORG'") as info:
        setup("mini", (*TINY, "max_sentence_tokens=2"), str(tmp_path))
    assert "1 training sentence longer than max_sentence_tokens=2 was skipped" in str(info.value)


def test_a_plain_dev_tag_training_never_has_is_refused(tmp_path: Path) -> None:
    _write(tmp_path / "train.txt", NER)
    _write(tmp_path / "dev.txt", [["Peter NNP O", "said VBX O"]])
    with pytest.raises(DataError, match=r"dev\.txt:2: dev tag 'VBX': tag 'VBX' never occurs"):
        setup("mini", (*TINY, "tag_column=1"), str(tmp_path))
