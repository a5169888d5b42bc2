"""SQuAD v1.1 reader: real-format sample, offsets and spans, bad-input policy, HF, loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bilm.pretrained import sha256_of
from tasks.common.io import DataError
from tasks.squad import data as squad_data
from tasks.squad.data import (
    CONTEXT_CUT,
    Answer,
    SquadNotAvailable,
    SquadReader,
    char_span_to_token_span,
    describe_cuts,
    example_from_row,
    load_squad,
    read_squad,
    repair_offset,
    to_hf_dataset,
    tokenize,
)
from tests.conftest import shared_path

CONTEXT = "Ada Lovelace was born in London in 1815. She wrote notes on the Analytical Engine."


def qa(qid: str, question: str, *answers: tuple[str, int]) -> dict[str, Any]:
    return {
        "id": qid,
        "question": question,
        "answers": [{"text": text, "answer_start": start} for text, start in answers],
    }


def document(*qas: dict[str, Any], context: str = CONTEXT) -> dict[str, Any]:
    return {
        "version": "1.1",
        "data": [{"title": "T", "paragraphs": [{"context": context, "qas": list(qas)}]}],
    }


def write(tmp_path: Path, value: object, name: str = "d.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return path


def error_of(path: Path) -> DataError:
    with pytest.raises(DataError) as info:
        list(SquadReader(path))
    return info.value


# --- real format --------------------------------------------------------------------------------


@pytest.mark.shared
def test_reader_on_real_format_sample() -> None:
    path = shared_path("fixtures", "formats", "rc", "squad.json")
    reader = SquadReader(path)
    examples = list(reader)
    assert reader.stats.examples == 5 and not reader.stats.skipped and not reader.repairs
    assert [len(e.answers) for e in examples] == [1, 3, 1, 1, 1]
    first = examples[0]
    assert first.qid == "5733be284776f41900661182"
    assert first.title == "University_of_Notre_Dame"
    assert first.answers == (Answer("Saint Bernadette Soubirous", 515),)
    assert first.span_text(*first.span) == "Saint Bernadette Soubirous"  # type: ignore[misc]
    assert first.question_tokens[:3] == ("To", "whom", "did")
    # Sub-token answer: "Father Julius Nieuwl" ends inside "Nieuwland". The span covers the whole
    # token; the answer text stays the original slice.
    partial = examples[3]
    assert partial.answers[0].text == "Father Julius Nieuwl"
    assert partial.span is not None
    assert partial.span_text(*partial.span) == "Father Julius Nieuwland"
    # keep="first" (training) keeps one answer
    assert [len(e.answers) for e in SquadReader(path, keep="first")] == [1] * 5


# --- tokens, offsets, spans ---------------------------------------------------------------------


def test_offsets_slice_back_to_tokens_and_whitespace_is_dropped() -> None:
    text = "  Hello,\tworld!\n\nIt's 3-4 p.m.\u00a0(ok)  "
    tokens, offsets = tokenize(text)
    assert tokens and all(not token.isspace() for token in tokens)
    assert [text[s:e] for s, e in offsets] == list(tokens)
    assert tokens[:4] == ("Hello", ",", "world", "!")


def test_answer_span_mapping_including_unaligned_answers(tmp_path: Path) -> None:
    doc = document(
        qa("exact", "Where?", ("London", 25)),
        qa("sub", "Part?", ("Lovel", 4)),  # starts at a token start, ends inside "Lovelace"
        qa("inner", "Inner?", ("ondo", 26)),  # strictly inside one token
        qa("cross", "Cross?", ("ace was", 8)),  # starts inside "Lovelace", ends at "was"
        qa("none", "No answer listed?"),
    )
    by_id = {e.qid: e for e in SquadReader(write(tmp_path, doc))}
    tokens = by_id["exact"].context_tokens
    assert tokens[by_id["exact"].span[0]] == "London"  # type: ignore[index]
    assert by_id["sub"].span == (1, 1) and by_id["sub"].answers[0].text == "Lovel"
    assert by_id["inner"].span_text(*by_id["inner"].span) == "London"  # type: ignore[misc]
    assert by_id["cross"].span_text(*by_id["cross"].span) == "Lovelace was"  # type: ignore[misc]
    assert by_id["none"].answers == () and by_id["none"].span is None
    assert char_span_to_token_span(((0, 3), (4, 8)), 3, 4) is None  # only the space


def test_repair_offset_picks_nearest_occurrence() -> None:
    context = "x the cat and the dog"
    assert repair_offset(context, "the", 3) == 2
    assert repair_offset(context, "the", 12) == 14
    assert repair_offset(context, "the", 100) is None
    assert repair_offset(context, "zebra", 5) is None


# --- bad-input policy: errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d["data"][0]["paragraphs"][0].pop("context"), 'missing "context"'),
        (lambda d: d["data"][0]["paragraphs"][0].pop("qas"), 'missing "qas"'),
        (lambda d: d["data"][0].pop("paragraphs"), 'missing "paragraphs"'),
        (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].pop("id"), 'missing "id"'),
        (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].pop("question"), 'missing "question"'),
        (lambda d: d["data"][0]["paragraphs"][0]["qas"][1].pop("answers"), 'missing "answers"'),
        (
            lambda d: d["data"][0]["paragraphs"][0]["qas"][1]["answers"][0].pop("answer_start"),
            'missing "answer_start"',
        ),
        (
            lambda d: d["data"][0]["paragraphs"][0]["qas"][1]["answers"][0].pop("text"),
            'missing "text"',
        ),
    ],
)
def test_missing_fields_name_the_json_path(tmp_path: Path, mutate: Any, reason: str) -> None:
    doc = document(qa("q0", "Who?", ("Ada", 0)), qa("q1", "Where?", ("London", 25)))
    mutate(doc)
    error = error_of(write(tmp_path, doc))
    where = {
        '"context"': "data[0].paragraphs[0]",
        '"qas"': "data[0].paragraphs[0]",
        '"paragraphs"': "data[0]",
        '"answer_start"': "data[0].paragraphs[0].qas[1].answers[0]",
        '"text"': "data[0].paragraphs[0].qas[1].answers[0]",
    }.get(reason.split()[1], "data[0].paragraphs[0].qas[1]")
    assert error.reason == f"{where}: {reason}"
    assert error.line is None and error.path == str(tmp_path / "d.json")


def test_bad_json_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "data": [\n    {"title": "T",, }\n  ]\n}\n', encoding="utf-8")
    error = error_of(path)
    assert error.line == 3 and error.reason.startswith("bad JSON: Expecting property name")


def test_invalid_utf8_reports_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"data": [\n{"title": "caf\xe9", "paragraphs": []}\n]}\n')
    error = error_of(path)
    assert error.line == 2 and error.reason.startswith("invalid UTF-8")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"data": {"title": "T"}}, "top level.data: expected a list, got object"),
        ([{"title": "T"}], "top level: expected an object, got list"),
        ({"version": "1.1"}, 'top level: missing "data"'),
        ({"data": ["x"]}, "data[0]: expected an object, got string"),
        (
            document(qa("q0", "Who?", ("Ada", "0"))),
            "data[0].paragraphs[0].qas[0].answers[0].answer_start: expected an integer, got string",
        ),
        (
            document(qa("q0", "Who?", ("Ada", True))),
            "data[0].paragraphs[0].qas[0].answers[0].answer_start: "
            "expected an integer, got boolean",
        ),
    ],
)
def test_wrong_structure_is_an_error(tmp_path: Path, value: object, reason: str) -> None:
    assert error_of(write(tmp_path, value)).reason == reason


def test_duplicate_question_id_is_an_error(tmp_path: Path) -> None:
    doc = document(qa("q0", "Who?", ("Ada", 0)), qa("q0", "Where?", ("London", 25)))
    assert error_of(write(tmp_path, doc)).reason == (
        "data[0].paragraphs[0].qas[1]: duplicate question id 'q0' "
        "(first at data[0].paragraphs[0].qas[0])"
    )


def test_missing_and_empty_files(tmp_path: Path) -> None:
    assert error_of(tmp_path / "absent.json").reason == "no such file"
    (tmp_path / "empty.json").write_text("\n", encoding="utf-8")
    assert error_of(tmp_path / "empty.json").reason == "empty file"


# --- bad-input policy: skips and repairs ---------------------------------------------------------


def test_skips_and_repairs_are_counted(tmp_path: Path) -> None:
    doc = document(
        qa("ok", "Who?", ("Ada", 0)),
        qa("repaired", "Where?", ("London", 20)),  # 5 chars early: found within ±20
        qa("mismatch", "When?", ("1999", 35)),  # not in the context
        qa("partly", "What?", ("notes", 200), ("notes", 51)),  # first bad, second fine
        qa("blank", "   "),
        qa("empty-answer", "Empty?", ("", 3)),
    )
    doc["data"][0]["paragraphs"].append(
        {"context": " \n", "qas": [qa("no-context", "Who?", ("x", 0))]}
    )
    reader = SquadReader(write(tmp_path, doc))
    by_id = {e.qid: e for e in reader}
    assert sorted(by_id) == ["ok", "partly", "repaired"]
    assert by_id["repaired"].answers == (Answer("London", 25),)
    assert by_id["partly"].answers == (Answer("notes", 51),)
    assert reader.repairs == {"offset_repaired": 1}
    assert reader.stats.examples == 3
    assert reader.stats.skipped == {
        "answer_offset_mismatch": 2,
        "no_usable_answer": 2,
        "empty_question": 1,
        "empty_answer": 1,
        "empty_context": 1,
    }


# --- fuzz: any JSON-ish input either reads or raises DataError -----------------------------------

_scalars = st.none() | st.booleans() | st.integers(-5, 300) | st.text(max_size=12)
_keys = st.sampled_from(
    ["data", "version", "title", "paragraphs", "context", "qas", "id", "question", "answers",
     "text", "answer_start"]
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_keys, children, max_size=5),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_json, raw=st.binary(max_size=40), use_raw=st.booleans())
def test_fuzz_only_data_errors(value: object, raw: bytes, use_raw: bool) -> None:
    reader = SquadReader.from_document(value, "<fuzz>")
    try:
        list(reader)
    except DataError:
        pass
    if use_raw:  # arbitrary bytes through the file path (JSON and UTF-8 errors)
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "f.json"
            path.write_bytes(raw)
            try:
                list(SquadReader(path))
            except DataError:
                pass


def _valid_document() -> dict[str, Any]:
    doc = document(qa("q0", "Who?", ("Ada", 0)), qa("q1", "Where?", ("London", 25), ("1815", 35)))
    doc["data"][0]["paragraphs"].append({"context": "Short one.", "qas": [qa("q2", "What?")]})
    return doc


def _leaves(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    children: list[tuple[object, object]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    return [path] + [p for key, child in children for p in _leaves(child, (*path, key))]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_fuzz_mutated_documents_read_or_raise_data_error(data: st.DataObject) -> None:
    doc = _valid_document()
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_leaves(doc)))
        if not path:
            continue
        parent: Any = doc
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(_json)
    reader = SquadReader.from_document(doc, "<mutated>")
    try:
        examples = list(reader)
    except DataError:
        return
    for example in examples:  # whatever survives obeys the invariants
        assert all(example.context[a.start : a.end] == a.text for a in example.answers)
        assert (example.span is None) == (not example.answers)


# --- Hugging Face dataset and loader -------------------------------------------------------------


def test_to_hf_dataset_round_trip_and_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = document(qa("q0", "Who?", ("Ada", 0)), qa("q1", "Where?", ("London", 25), ("London", 25)))
    path = write(tmp_path, doc)
    cache = tmp_path / "cache"
    dataset = to_hf_dataset(path, cache_dir=cache)
    assert dataset.num_rows == 2
    assert [example_from_row(row) for row in dataset] == read_squad(path)
    entries = [p.name for p in cache.iterdir()]
    sha = sha256_of(path)
    assert entries == [f"squad-r{squad_data.READER_VERSION}-all-{sha}"]
    stats = json.loads((cache / entries[0] / "read_stats.json").read_text(encoding="utf-8"))
    assert stats["examples"] == 2

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("cache miss: the file was read again")

    monkeypatch.setattr(squad_data, "SquadReader", fail)
    assert to_hf_dataset(path, cache_dir=cache)[1]["span"] == [5, 5]


def test_load_squad_reads_local_files(tmp_path: Path) -> None:
    doc = document(qa("q1", "Where?", ("London", 25), ("in London", 22)))
    write(tmp_path, doc, "train-v1.1.json")
    write(tmp_path, doc, "dev-v1.1.json")
    assert len(load_squad("train", tmp_path)[0].answers) == 1
    assert len(load_squad("validation", tmp_path)[0].answers) == 2
    with pytest.raises(ValueError, match="unknown SQuAD split"):
        load_squad("test", tmp_path)


def test_load_squad_offline_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets
    import huggingface_hub.constants

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # both libraries read the variables at import time, so set their module flags as well
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(SquadNotAvailable) as info:
        load_squad("dev", "hf:rajpurkar/squad", cache_dir=tmp_path / "hf")
    message = str(info.value)
    assert "--data DIR" in message and "train-v1.1.json and dev-v1.1.json" in message
    assert "'rajpurkar/squad'" in message and "HF_DATASETS_OFFLINE=1" in message


def test_a_data_folder_is_never_completed_from_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_hub() -> None:
        raise AssertionError("the Hugging Face Hub was consulted for a --data folder")

    monkeypatch.setattr(squad_data, "require_datasets", no_hub)
    write(tmp_path, document(qa("q1", "Where?", ("London", 25))), "train-v1.1.json")
    for call in (lambda: load_squad("dev", tmp_path), lambda: squad_data.load_splits(tmp_path, 9)):
        with pytest.raises(FileNotFoundError) as info:
            call()
        message = str(info.value)
        assert message.startswith(f"{tmp_path}: no dev-v1.1.json;") and "\n" not in message
        assert message.endswith("pass --data hf:rajpurkar/squad to read it from there")
    with pytest.raises(SquadNotAvailable, match="no such folder.*no train-v1.1.json and no dev"):
        squad_data.load_splits(tmp_path / "nowhere", None)


def test_hf_name_reads_that_hugging_face_dataset(monkeypatch: pytest.MonkeyPatch) -> None:
    row = {"id": "q1", "title": "T", "context": CONTEXT, "question": "Where?"}
    row["answers"] = {"text": ["London"], "answer_start": [25]}
    seen: list[str] = []

    def load_dataset(name: str, split: str, cache_dir: str | None = None) -> list[object]:
        seen.append(f"{name}[{split}]")
        return [row]

    monkeypatch.setattr(
        squad_data, "require_datasets", lambda: type("ds", (), {"load_dataset": load_dataset})
    )
    splits, stats = squad_data.load_splits("hf:me/squad-copy", None)
    assert seen == ["me/squad-copy[train]", "me/squad-copy[validation]"]
    assert [ex.qid for ex in splits["dev"]] == ["q1"]
    assert stats["dev"].source == "hf:me/squad-copy[validation]"


# --- answerless dev questions, contexts cut at max_context_tokens -------------------------------


def test_a_dev_question_without_answers_is_refused_at_read_time(tmp_path: Path) -> None:
    train = document(qa("t1", "Where?", ("London", 25)), qa("t2", "Who?"))
    write(tmp_path, train, "train-v1.1.json")
    dev = document(qa("d1", "Where?", ("London", 25)), qa("d-none", "When?"))
    dev["data"][0]["paragraphs"][0]["qas"][1]["is_impossible"] = True
    write(tmp_path, dev, "dev-v1.1.json")
    with pytest.raises(DataError) as info:
        squad_data.load_splits(tmp_path, None)
    error = info.value
    assert error.path == str(tmp_path / "dev-v1.1.json")
    assert error.reason.startswith("data[0].paragraphs[0].qas[1]: question 'd-none' has no answ")
    assert '(marked "is_impossible": SQuAD 2.0)' in error.reason
    assert "SQuAD 2.0 is not supported" in error.reason
    assert [ex.qid for ex in load_squad("train", tmp_path)] == ["t1", "t2"]  # train: skipped later
    assert [ex.answers for ex in SquadReader(tmp_path / "dev-v1.1.json")][1] == ()  # predictions


def test_contexts_cut_at_max_context_tokens_are_counted_in_every_split(tmp_path: Path) -> None:
    long = CONTEXT + " More words follow here." * 10  # 17 + 50 tokens; "notes" is token 11
    doc = document(qa("near", "Where?", ("London", 25)), qa("far", "What?", ("notes", 51)))
    doc["data"][0]["paragraphs"].append({"context": long, "qas": [qa("long", "Who?", ("Ada", 0))]})
    write(tmp_path, doc, "train-v1.1.json")
    write(tmp_path, doc, "dev-v1.1.json")
    splits, stats = squad_data.load_splits(tmp_path, 10)
    assert [ex.qid for ex in splits["train"]] == ["near", "long"]  # "far": answer beyond the cut
    assert stats["train"].skipped == {"answer beyond max_context_tokens": 1, CONTEXT_CUT: 2}
    assert stats["dev"].skipped == {CONTEXT_CUT: 3} and stats["dev"].examples == 3
    assert stats["dev"].skipped_share() == 0.0  # exempt: a configured cut, questions kept
    assert stats["dev"].as_dict()["variant"] == (
        "3 of 3 contexts truncated to 10 tokens (max 67, question 'long')"
    )
    assert describe_cuts(splits["dev"], 100) == "0 of 3 contexts truncated to 100 tokens"
    _, whole = squad_data.load_splits(tmp_path, None)
    assert CONTEXT_CUT not in whole["dev"].skipped and not whole["dev"].variant
