"""CoNLL-U (Universal Dependencies) data for the tagger: the three namings
(UD release, ``train.conllu``, split folders), what is skipped (comments, multiword tokens,
empty nodes), UPOS vs XPOS, located errors, per-token scoring and a one-epoch run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.common.io import DataError, ReadStats
from tasks.common.spans import Scheme
from tasks.ner.data import Splits, encode_splits, find_layout, load_splits, read_conllu
from tasks.ner.demo import ensure_demo
from tasks.ner.task import TASK, setup
from tests.tasks.helpers import run_module, write_lines

TINY = ("word_vectors=random:4", "hidden=[4,3]", "char_filters=4")


def _row(*fields: str) -> str:
    return "\t".join(fields)


# Two sentences (UD v2 style): a comment block, a multiword token ("don't" = "do" + "n't") and
# an empty node (8.1, enhanced dependencies) in the first.
SENTENCE_1 = [
    "# sent_id = s1",
    "# text = I don't know why.",
    _row("1", "I", "I", "PRON", "PRP", "Case=Nom", "4", "nsubj", "4:nsubj", "_"),
    _row("2-3", "don't", "_", "_", "_", "_", "_", "_", "_", "_"),
    _row("2", "do", "do", "AUX", "VBP", "Mood=Ind", "4", "aux", "4:aux", "_"),
    _row("3", "n't", "not", "PART", "RB", "_", "4", "advmod", "4:advmod", "_"),
    _row("4", "know", "know", "VERB", "VB", "VerbForm=Inf", "0", "root", "0:root", "_"),
    _row("4.1", "know", "know", "VERB", "VB", "_", "_", "_", "4:conj", "CopyOf=4"),
    _row("5", "why", "why", "ADV", "WRB", "_", "4", "advmod", "4:advmod", "SpaceAfter=No"),
    _row("6", ".", ".", "PUNCT", ".", "_", "4", "punct", "4:punct", "_"),
]
SENTENCE_2 = [
    "# sent_id = s2",
    _row("1", "New York", "New York", "PROPN", "NNP", "_", "2", "nsubj", "2:nsubj", "_"),
    _row("2", "sleeps", "sleep", "VERB", "VBZ", "_", "0", "root", "0:root", "_"),
]


def _conllu(path: Path, *sentences: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    for sentence in sentences:
        lines += [*sentence, ""]
    return write_lines(path, lines)


def _read(folder: Path, *overrides: str) -> tuple[Splits, dict[str, ReadStats], Scheme | None]:
    """Splits, statistics and scheme as the task's setup reads them (no vocabulary built)."""
    config = TASK.configure("mini", overrides)
    raw, stats = load_splits(config, str(folder), ensure_demo)
    splits, scheme, _ = encode_splits(raw, config, stats)
    return splits, stats, scheme


def _ud_folder(folder: Path) -> Path:
    _conllu(folder / "en_tiny-ud-train.conllu", SENTENCE_1, SENTENCE_2)
    _conllu(folder / "en_tiny-ud-dev.conllu", SENTENCE_2)
    _conllu(folder / "en_tiny-ud-test.conllu", SENTENCE_1)
    return folder


def test_ud_naming_reads_forms_and_upos_skipping_the_rest(tmp_path: Path) -> None:
    splits, stats, scheme = _read(_ud_folder(tmp_path))
    assert [len(splits[s]) for s in ("train", "dev", "test")] == [2, 1, 1]
    first = splits["train"][0]
    assert first.tokens == ("I", "do", "n't", "know", "why", ".")  # words, not "don't"
    assert first.tags == ("PRON", "AUX", "PART", "VERB", "ADV", "PUNCT")
    assert first.line == 3 and Path(first.path).name == "en_tiny-ud-train.conllu"
    assert splits["train"][1].tokens == ("New York", "sleeps")  # FORM may hold a space
    assert scheme is None  # POS tags: plain, scored per token
    variant = stats["train"].variant
    assert variant.startswith("CoNLL-U (UD naming): en_tiny-ud-train.conllu, UPOS tags (field 4")
    assert "1 multiword token skipped, 1 empty node skipped" in variant
    assert "plain tags, scored per token (detected from train)" in variant
    assert "0 multiword tokens skipped, 0 empty nodes skipped" in stats["dev"].variant
    assert stats["test"].source == str(tmp_path / "en_tiny-ud-test.conllu")


def test_xpos_on_request_and_a_missing_xpos_is_located(tmp_path: Path) -> None:
    splits, stats, _ = _read(_ud_folder(tmp_path), "conllu_tag=xpos")
    assert splits["train"][0].tags == ("PRP", "VBP", "RB", "VB", "WRB", ".")
    assert "XPOS tags (field 5; --set conllu_tag=upos|xpos)" in stats["train"].variant
    no_xpos = [line.replace("\tNNP\t", "\t_\t") for line in SENTENCE_2]
    _conllu(tmp_path / "en_tiny-ud-dev.conllu", SENTENCE_2, no_xpos)
    with pytest.raises(DataError) as info:
        _read(tmp_path, "conllu_tag=xpos")
    assert (info.value.path, info.value.line) == (str(tmp_path / "en_tiny-ud-dev.conllu"), 6)
    assert "no XPOS for the word 'New York' ('_')" in info.value.reason
    assert "--set conllu_tag=upos" in info.value.reason
    splits, _, _ = _read(tmp_path)  # UPOS is there
    assert splits["dev"][1].tags == ("PROPN", "VERB")


def test_plain_naming_and_split_folders_are_detected(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    _conllu(plain / "train.conllu", SENTENCE_1, SENTENCE_2)
    _conllu(plain / "dev.conllu", SENTENCE_2)
    splits, stats, _ = _read(plain)
    assert set(splits) == {"train", "dev"} and len(splits["train"]) == 2  # test is optional
    assert stats["dev"].variant.startswith("CoNLL-U (plain naming): dev.conllu, UPOS tags")
    folders = tmp_path / "folders"
    _conllu(folders / "train" / "b.conllu", SENTENCE_1)
    _conllu(folders / "train" / "a.conllu", SENTENCE_2)
    _conllu(folders / "dev" / "c.conllu", SENTENCE_2)
    (folders / "train" / "README.md").write_text("not data\n")
    layout = find_layout(folders)
    assert (layout.name, layout.description) == ("conllu", "CoNLL-U (folders)")
    splits, stats, _ = _read(folders, "layout=conllu")
    assert [Path(ex.path).name for ex in splits["train"]] == ["a.conllu", "b.conllu"]
    assert stats["train"].source == str(folders / "train")
    assert stats["train"].variant.startswith(
        "CoNLL-U (folders): train/ folder of 2 *.conllu files, UPOS tags"
    )
    assert "1 multiword token skipped" in stats["train"].variant


def test_short_lines_bad_ids_and_sequence_errors_are_located(tmp_path: Path) -> None:
    cases = [
        (_row("1", "I", "I", "PRON", "PRP", "_", "0", "root", "_"), "expected 10 tab-separated"),
        (" ".join(["1", "I", "I", "PRON", "PRP", "_", "0", "root", "_", "_"]), "space-separated"),
        (_row("x", "I", "I", "PRON", "PRP", "_", "0", "root", "_", "_"), "ID 'x' is no word"),
        (_row("2", "I", "I", "PRON", "PRP", "_", "0", "root", "_", "_"), "word ID 2 where 1"),
        (_row("1", "", "I", "PRON", "PRP", "_", "0", "root", "_", "_"), "field FORM is empty"),
    ]
    for bad, reason in cases:
        path = _conllu(tmp_path / "a.conllu", SENTENCE_2, ["# c", bad])
        with pytest.raises(DataError) as info:
            list(read_conllu(path))
        assert (info.value.path, info.value.line) == (str(path), 6), bad
        assert reason in info.value.reason, (bad, info.value.reason)
    path = write_lines(tmp_path / "b.conllu", ["\ufeff# bom", *SENTENCE_2[1:]])  # no blank end
    assert [s.tags for s in read_conllu(path)] == [("PROPN", "VERB")]


def test_options_that_do_not_apply_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"tag_column=3 does not apply to CoNLL-U.*conllu_tag"):
        _read(_ud_folder(tmp_path / "ud"), "tag_column=3")
    (tmp_path / "txt").mkdir()
    write_lines(tmp_path / "txt" / "train.txt", ["EU NNP B-ORG", ""])
    write_lines(tmp_path / "txt" / "dev.txt", ["EU NNP B-ORG", ""])
    with pytest.raises(ValueError, match=r"conllu_tag=xpos applies to CoNLL-U data only"):
        _read(tmp_path / "txt", "conllu_tag=xpos")


def test_ambiguous_folders_and_missing_dev_name_what_was_looked_for(tmp_path: Path) -> None:
    _ud_folder(tmp_path)
    _conllu(tmp_path / "fr_tiny-ud-train.conllu", SENTENCE_2)
    with pytest.raises(DataError, match=r"several train files \(en_tiny-ud-train.conllu, fr_"):
        find_layout(tmp_path)
    (tmp_path / "fr_tiny-ud-train.conllu").unlink()
    _conllu(tmp_path / "train.conllu", SENTENCE_2)
    with pytest.raises(DataError, match=r"several namings \(CoNLL-U \(UD naming\), CoNLL-U \(pl"):
        find_layout(tmp_path)
    (tmp_path / "train.conllu").unlink()
    write_lines(tmp_path / "train.txt", ["EU NNP B-ORG", ""])
    with pytest.raises(DataError, match=r"several layouts \(txt, conllu\)"):
        find_layout(tmp_path)
    assert find_layout(tmp_path, "conllu").description == "CoNLL-U (UD naming)"
    (tmp_path / "train.txt").unlink()
    (tmp_path / "en_tiny-ud-dev.conllu").unlink()
    with pytest.raises(FileNotFoundError, match=r"looked for \*-ud-dev.conllu \(CoNLL-U \(UD"):
        _read(tmp_path)
    _conllu(tmp_path / "en_tiny-ud-train.conllu", SENTENCE_1, SENTENCE_2, SENTENCE_2)  # PROPN kept
    splits, stats, _ = _read(tmp_path, "dev_from_train=1")
    assert len(splits["dev"]) == 1 and "CoNLL-U (UD naming)" in stats["dev"].variant


def test_setup_scores_tokens_and_a_one_epoch_run_works(tmp_path: Path) -> None:
    data = _ud_folder(tmp_path / "ud")
    recipe = setup("mini", TINY, str(data))
    assert recipe.scheme is None and recipe.encoding is None
    assert recipe.labels == ["ADV", "AUX", "PART", "PRON", "PROPN", "PUNCT", "VERB"]
    test = recipe.splits["test"]
    guess = [["VERB"] * len(ex.tokens) for ex in test]
    scores = recipe.score(guess, test)
    assert scores["accuracy"] == pytest.approx(1 / 6) == pytest.approx(scores["f1"])
    store = tmp_path / "store"
    run_module(
        "experiments", "run", "ner", "--data", str(data), "--repr", "none", "--max-epochs", "1",
        "--threads", "1", "--store", str(store), "--work", str(tmp_path / "work"), "--quiet",
        "--set", *TINY,
    )  # fmt: skip
    metrics = [json.loads(p.read_text()) for p in store.rglob("metrics.json")]
    assert len(metrics) == 1 and 0.0 <= metrics[0]["dev_accuracy"] <= 1.0, metrics
    (predictions,) = store.rglob("predictions-dev.txt")
    assert predictions.read_text().startswith("New_York PROPN ")  # one conlleval field
