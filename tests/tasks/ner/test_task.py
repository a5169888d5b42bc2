"""NER through the task protocol: presets, column data, scheme detection, bad input, per-type
F1 and seqeval agreement with the official scorer, and unit ids (the shared properties, learning
included, are in tests/contract/test_tasks.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tasks.common.io import DataError, ReadStats
from tasks.common.spans import spans_to_tags, tags_to_spans
from tasks.ner import data as ner_data
from tasks.ner.data import TaggedSentence, detect_scheme, read_columns
from tasks.ner.evaluate import evaluate_file
from tasks.ner.task import TASK, VERSION, seqeval_per_type, setup
from tests.tasks.helpers import write_lines

TINY = ("word_vectors=random:4", "hidden=[4,3]", "char_filters=4")


def _column_data(folder: Path, sentences: list[list[tuple[str, ...]]], name: str) -> Path:
    lines: list[str] = []
    for sentence in sentences:
        lines += [" ".join(fields) for fields in sentence] + [""]
    return write_lines(folder / name, lines)


CHUNKS = [
    [
        ("He", "PRP", "B-NP"),
        ("reckons", "VBZ", "B-VP"),
        ("the", "DT", "B-NP"),
        ("deficit", "NN", "I-NP"),
    ],
    [("Rockwell", "NNP", "B-NP"), ("said", "VBD", "B-VP"), ("it", "PRP", "B-NP")],
    [("The", "DT", "B-NP"), ("pound", "NN", "I-NP"), ("fell", "VBD", "B-VP"), (".", ".", "O")],
]


def test_presets_and_task_spec() -> None:
    paper, mini = TASK.configure("paper", ()), TASK.configure("mini", ())
    assert paper.word_vectors == "glove" and paper.lowercase_words and paper.train_word_vectors
    assert (paper.char_dim, paper.char_filters, paper.char_width) == (16, 128, 3)
    assert paper.hidden == (200, 200) and paper.dropout == 0.5  # allennlp ner.jsonnet
    assert paper.train.optimizer.lr == 1e-3 and paper.train.clip_norm == 5.0
    assert paper.label_encoding == "BIOUL" and not paper.include_start_end
    assert mini.hidden[0] == 2 * mini.hidden[1] and mini.train.patience is not None
    assert TASK.version == VERSION and TASK.presets == ("mini", "paper")
    assert TASK.default_sites == frozenset({"input"}) and TASK.default_mix.lam == 0.1
    assert TASK.seeds == 5 and TASK.elmo_dropout == 0.0
    with pytest.raises(ValueError, match="task 'ner' has no preset 'huge'"):
        TASK.configure("huge", ())
    with pytest.raises(FileNotFoundError, match="--glove"):
        setup("paper", ("word_vectors=glove-840b",), None)


def test_chunking_columns_with_a_held_out_dev_split(tmp_path: Path) -> None:
    _column_data(tmp_path, CHUNKS * 4, "train.txt")
    _column_data(tmp_path, CHUNKS, "test.txt")
    with pytest.raises(FileNotFoundError, match="dev_from_train"):
        setup("mini", TINY, str(tmp_path))
    recipe = setup("mini", (*TINY, "dev_from_train=3"), str(tmp_path))
    assert (recipe.scheme, recipe.encoding) == ("IOB2", "BIOUL")
    assert [len(recipe.splits[s]) for s in ("train", "dev", "test")] == [9, 3, 3]
    assert recipe.splits["dev"][2].tags == ("B-NP", "L-NP", "U-VP", "O")  # converted to BIOUL
    assert "L-NP" in recipe.labels and "U-VP" in recipe.labels
    pos = setup("mini", (*TINY, "dev_from_train=3", "tag_column=1"), str(tmp_path))
    assert pos.scheme is None and pos.encoding is None and "VBZ" in pos.labels
    gold = [list(ex.tags) for ex in pos.splits["test"]]
    guess = [["NN"] * len(t) for t in gold]
    scores = pos.score(guess, pos.splits["test"])
    assert scores["f1"] == pytest.approx(scores["accuracy"]) == pytest.approx(2 / 11)
    path = pos.write_predictions(guess, pos.splits["test"], tmp_path / "pos")
    assert evaluate_file(path, raw=True).f1 == pytest.approx(100 * scores["f1"])


def test_detect_scheme() -> None:
    assert detect_scheme([["I-PER", "O", "I-LOC", "B-LOC"]]) == "IOB1"
    assert detect_scheme([["B-PER", "I-PER", "O", "B-LOC"]]) == "IOB2"
    assert detect_scheme([["B-PER", "L-PER", "U-LOC"]]) == "BIOUL"
    assert detect_scheme([["NN", "VBZ", "-LRB-", "O"]]) is None
    assert detect_scheme([["O", "O"]]) == None  # noqa: E711 - no chunk tag at all: plain


def test_bad_input_is_located(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "a.txt", ["EU NNP I-ORG", "rejects VBZ O", "", "Peter NNP"])
    with pytest.raises(DataError) as info:
        list(read_columns(path, 2))
    assert info.value.line == 4 and "no tag column 2" in info.value.reason
    with pytest.raises(DataError, match="no tag column 0"):
        list(read_columns(path, 0))
    long = write_lines(tmp_path / "b.txt", ["a O", "b O", "c O", "", "d O", "", "e O"])
    with pytest.raises(DataError) as info:
        list(read_columns(long, max_tokens=2))
    assert info.value.line == 1 and "longer than max_sentence_tokens=2" in info.value.reason
    stats = ReadStats()
    kept = list(read_columns(long, max_tokens=2, skip_long=True, stats=stats))
    assert [s.tokens for s in kept] == [("d",), ("e",)]
    assert stats.skipped == {"longer than max_tokens": 1} and stats.examples == 2
    bad = [TaggedSentence(("a", "b"), ("I-PER", "X-PER"), 7, "f.txt")]
    with pytest.raises(DataError) as info:
        ner_data.check_tags(bad, "IOB1")
    assert (info.value.path, info.value.line) == ("f.txt", 8) and "outside the IOB1" in str(
        info.value
    )


def test_a_tag_outside_the_scheme_in_dev_is_an_error(tmp_path: Path) -> None:
    _column_data(tmp_path, CHUNKS, "train.txt")
    _column_data(tmp_path, [[("a", "DT", "B-NP"), ("b", "NN", "E-NP")]], "dev.txt")
    with pytest.raises(DataError, match=r"dev.txt:2: tag 'E-NP' is outside the IOB2"):
        setup("mini", TINY, str(tmp_path))


def test_hugging_face_offline_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Offline:
        @staticmethod
        def load_dataset(name: str) -> None:
            raise ConnectionError("no network")

    monkeypatch.setattr(ner_data, "require_datasets", lambda: Offline)
    with pytest.raises(FileNotFoundError, match="eng.train, eng.testa and eng.testb"):
        setup("mini", TINY, "hf:conll2003")


@pytest.fixture(scope="module")
def recipe():  # type: ignore[no-untyped-def]
    return setup("mini", TINY, None)


def _random_tagging(gold: list[str], rng: random.Random, scheme: str) -> list[str]:
    """Gold spans with some dropped, moved or retyped, encoded in ``scheme`` (valid)."""
    spans = []
    for span in tags_to_spans(gold, "BIOUL"):
        roll = rng.random()
        if roll < 0.2:
            continue
        if roll < 0.4:
            span = type(span)(span.start, span.end, rng.choice(["PER", "LOC", "MISC", "ORG"]))
        spans.append(span)
    return spans_to_tags(len(gold), spans, scheme)  # type: ignore[arg-type]


def test_per_type_f1_of_score_is_the_evaluators(recipe, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """seqeval's per-type F1 in ``score()`` equals conlleval's on the written file (the overall
    numbers: tests/contract/test_tasks.py)."""
    dev = recipe.splits["dev"]
    rng = random.Random(0)
    predictions = [_random_tagging(list(ex.tags), rng, "BIOUL") for ex in dev]
    ours = recipe.score(predictions, dev)
    official = evaluate_file(recipe.write_predictions(predictions, dev, tmp_path / "predictions"))
    assert 0.3 < ours["f1"] < 0.95 and official.per_type
    for name, score in official.per_type.items():
        assert ours[f"f1_{name}"] == pytest.approx(score.f1, abs=1e-9)  # seqeval == conlleval


@pytest.mark.parametrize("scheme", ["IOB1", "IOB2"])
def test_seqeval_default_mode_agrees_with_the_evaluator(
    recipe, scheme: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    from seqeval.metrics import f1_score

    from tasks.ner.evaluate import write_tagged

    rng = random.Random(1)
    dev = recipe.splits["dev"][:200]
    gold = [spans_to_tags(len(ex.tags), tags_to_spans(ex.tags, "BIOUL"), scheme) for ex in dev]  # type: ignore[arg-type]
    guess = [_random_tagging(list(ex.tags), rng, scheme) for ex in dev]
    path = tmp_path / "out.txt"
    write_tagged(path, [ex.tokens for ex in dev], gold, guess)
    official = evaluate_file(path)
    assert f1_score(gold, guess) * 100 == pytest.approx(official.f1, abs=1e-9)
    per_type = seqeval_per_type(gold, guess)
    assert set(per_type) == {f"f1_{t}" for t in official.per_type}
    for name, score in official.per_type.items():
        assert per_type[f"f1_{name}"] == pytest.approx(score.f1, abs=1e-9)


def test_unit_ids_are_the_sentences_file_and_line() -> None:
    """Unit ids are ``FILE:LINE`` of each sentence's first word: unique, the same for two
    different predictions on the same data, and locating the sentence in its file."""
    recipe = setup("mini", TINY, None)
    dev = recipe.splits["dev"]
    all_o = recipe.unit_statistics([["O"] * len(ex.tags) for ex in dev], dev)
    gold = recipe.unit_statistics([list(ex.tags) for ex in dev], dev)
    assert all_o.ids == gold.ids and all_o.rows != gold.rows
    assert len(set(gold.ids)) == len(dev)
    lines = Path(dev[0].path).read_text(encoding="utf-8").splitlines()
    for unit, ex in zip(gold.ids, dev, strict=True):
        name, line = unit.rsplit(":", 1)
        assert name == "eng.testa" and lines[int(line) - 1].split()[0] == ex.tokens[0]
    subset = recipe.unit_statistics([list(ex.tags) for ex in dev[5:9]], dev[5:9])
    assert subset.ids == gold.ids[5:9]  # a sentence's id does not depend on its position


def test_unit_ids_of_repeated_locations_are_disambiguated_in_order() -> None:
    """Sentences without a location (line 0, e.g. built in code) still get unique ids."""
    from tasks.ner.task import unit_ids

    a = TaggedSentence(("a",), ("O",), 3, "/x/f.txt")
    bare = TaggedSentence(("b",), ("O",))
    assert unit_ids([a, bare, bare, a, bare]) == (
        "f.txt:3",
        ":0",
        ":0#2",
        "f.txt:3#2",
        ":0#3",
    )
