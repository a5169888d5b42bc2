"""conlleval parity: hand-computed cases (including its traps), properties, and seqeval contrasts.

Expected numbers were computed by hand from conlleval's rules (and agree with conlleval.pl
2004-01-26 run on the same input).
"""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.common.spans import tags_to_spans
from tasks.ner.metric import conlleval, score_rows, split_tag


def counts(gold: list[str], predicted: list[str], **options: object) -> tuple[int, int, int]:
    result = conlleval([gold], [predicted], **options)
    return result.overall.gold, result.overall.predicted, result.overall.correct


# name: (gold, predicted, (gold chunks, predicted chunks, correct chunks), accuracy %)
CASES = {
    # IOB1 as shipped: chunks start with I-.
    "chunks starting with I-": (
        ["I-PER", "I-PER", "O", "I-LOC"],
        ["I-PER", "I-PER", "O", "I-LOC"],
        (2, 2, 2),
        100.0,
    ),
    # Same chunks in IOB2: chunk scores agree, token accuracy does not.
    "IOB1 gold, IOB2 prediction": (
        ["I-PER", "I-PER", "O", "I-LOC"],
        ["B-PER", "I-PER", "O", "B-LOC"],
        (2, 2, 2),
        50.0,
    ),
    # A type change inside an I- run starts a new chunk.
    "type change": (["I-PER", "I-LOC"], ["I-PER", "I-PER"], (2, 1, 0), 50.0),
    # B- after I- of the same type starts a new chunk (IOB1 adjacency).
    "B- after I-": (["I-PER", "B-PER"], ["I-PER", "I-PER"], (2, 1, 0), 50.0),
    # A predicted span crossing a gold boundary matches nothing.
    "prediction crossing a gold boundary": (
        ["B-PER", "I-PER", "O", "B-LOC", "I-LOC"],
        ["O", "B-PER", "I-PER", "I-PER", "O"],
        (2, 1, 0),
        0.0,
    ),
    # Same start, prediction runs on: wrong.
    "prediction too long": (["B-PER", "O"], ["B-PER", "I-PER"], (1, 1, 0), 50.0),
    # IOE: E- closes a chunk, a following I- opens the next one.
    "IOE E- then I-": (["I-PER", "E-PER", "I-PER"], ["I-PER", "E-PER", "I-PER"], (2, 2, 2), 100.0),
    # conlleval has no S- rule: S-X S-X is ONE chunk (seqeval says two).
    "S- S- merged": (["S-PER", "S-PER"], ["S-PER", "O"], (1, 1, 0), 50.0),
    # ... and E- followed by B- of the same type does not split either.
    "B-E-B-E merged": (
        ["B-PER", "E-PER", "B-PER", "E-PER"],
        ["B-PER", "E-PER", "O", "O"],
        (1, 1, 0),
        50.0,
    ),
    # Types may contain hyphens: split at the first one.
    "hyphen in type": (["B-ORG-X", "I-ORG-X"], ["B-ORG-X", "I-ORG-X"], (1, 1, 1), 100.0),
    "nothing to find": (["O", "O"], ["O", "O"], (0, 0, 0), 100.0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_computed_cases(name: str) -> None:
    gold, predicted, expected, accuracy = CASES[name]
    result = conlleval([gold], [predicted])
    assert (result.overall.gold, result.overall.predicted, result.overall.correct) == expected
    assert result.accuracy == pytest.approx(accuracy)


def test_full_report_numbers() -> None:
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["I-ORG", "O", "I-MISC", "I-MISC"]]
    predicted = [["B-PER", "I-PER", "O", "B-ORG"], ["I-ORG", "O", "I-MISC", "O"]]
    result = conlleval(gold, predicted)
    # gold 4 chunks, predicted 4, correct 2 (PER, ORG in sentence 2).
    assert (result.precision, result.recall, result.f1) == (50.0, 50.0, 50.0)
    assert result.accuracy == pytest.approx(100 * 6 / 8)
    assert list(result.per_type) == ["LOC", "MISC", "ORG", "PER"]
    org = result.per_type["ORG"]
    assert (org.gold, org.predicted, org.correct) == (1, 2, 1)
    assert org.scores(100)[:2] == (50.0, 100.0)  # percent, as conlleval prints them
    assert org.scores(100)[2] == pytest.approx(200 / 3)
    assert result.per_type["LOC"].as_dict()["f1"] == 0.0
    assert result.as_dict()["per_type"]["PER"]["precision"] == 100.0


def test_sentence_boundaries_split_chunks() -> None:
    # As two sentences: two PER chunks; as one line stream without a blank line: one chunk.
    split = conlleval([["I-PER"], ["I-PER"]], [["I-PER"], ["I-PER"]])
    assert (split.overall.gold, split.overall.correct) == (2, 2)
    joined = score_rows([("a", "I-PER", "I-PER"), ("b", "I-PER", "I-PER")])
    assert joined.overall.gold == 1
    marker = score_rows([("a", "I-PER", "I-PER"), ("-X-", "x", "y"), ("b", "I-PER", "I-PER")])
    assert (marker.overall.gold, marker.tokens) == (2, 2)  # -X- rows are boundaries, not tokens


def test_raw_mode_every_tag_is_its_own_chunk() -> None:
    gold, predicted = ["PER", "PER", "O", "LOC"], ["PER", "O", "O", "LOC"]
    assert counts(gold, predicted, raw=True) == (3, 2, 2)
    result = conlleval([gold], [predicted], raw=True)
    assert (result.precision, result.recall, result.f1) == (100.0, pytest.approx(200 / 3), 80.0)
    # -o: another outside tag (only used with -r).
    assert counts(["NONE", "PER"], ["PER", "PER"], raw=True, outside_tag="NONE") == (1, 2, 1)


def test_split_tag_like_conlleval() -> None:
    assert split_tag("B-ORG-X") == ("B", "ORG-X")
    assert split_tag("O") == ("O", "")
    assert split_tag("B-0") == ("B", "")  # Perl reads the type "0" as false
    assert split_tag("-") == ("", "")


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(ValueError, match="sentence 0"):
        conlleval([["O", "O"]], [["O"]])
    with pytest.raises(ValueError):
        conlleval([["O"]], [["O"], ["O"]])


IOB = st.lists(st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]), max_size=12)


@given(st.data())
def test_correct_chunks_are_exact_span_matches(data: st.DataObject) -> None:
    gold = data.draw(IOB)
    predicted = data.draw(
        st.lists(
            st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]),
            min_size=len(gold),
            max_size=len(gold),
        )
    )
    result = conlleval([gold], [predicted])
    gold_chunks, predicted_chunks = tags_to_spans(gold, "IOB1"), tags_to_spans(predicted, "IOB1")
    assert result.overall.gold == len(gold_chunks)
    assert result.overall.predicted == len(predicted_chunks)
    assert result.overall.correct == len(set(gold_chunks) & set(predicted_chunks))


# --- seqeval contrasts -------------------------------------------------------------------------
# (gold, predicted, conlleval F1 %, seqeval default-mode F1, seqeval strict IOB2 F1 or None when
# strict IOB2 rejects the tags). Documented seqeval 1.2.2 behaviour: the default mode follows
# conlleval for B/I/O but splits S-/E- sequences; mode="strict", scheme=IOB2 drops every chunk
# that starts with I- (so raw IOB1 data loses most entities) and a chunk after a type change.
SEQEVAL_CASES = {
    "IOB1 data, strict IOB2 drops I- chunks": (
        ["I-PER", "I-PER", "O", "I-LOC"],
        ["I-PER", "I-PER", "O", "I-LOC"],
        100.0,
        1.0,
        0.0,
    ),
    "type change without B-": (["B-PER", "I-LOC"], ["B-PER", "B-LOC"], 100.0, 1.0, 2 / 3),
    "S- S-": (["S-PER", "S-PER"], ["S-PER", "O"], 0.0, 2 / 3, None),
    "B-E-B-E": (
        ["B-PER", "E-PER", "B-PER", "E-PER"],
        ["B-PER", "E-PER", "O", "O"],
        0.0,
        2 / 3,
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(SEQEVAL_CASES))
def test_where_seqeval_and_conlleval_differ(name: str) -> None:
    gold, predicted, ours, default, strict = SEQEVAL_CASES[name]
    assert conlleval([gold], [predicted]).f1 == pytest.approx(ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        metrics = pytest.importorskip("seqeval.metrics")
        scheme = pytest.importorskip("seqeval.scheme")
        assert metrics.f1_score([gold], [predicted]) == pytest.approx(default)
        if strict is None:
            with pytest.raises(ValueError):
                metrics.f1_score([gold], [predicted], mode="strict", scheme=scheme.IOB2)
        else:
            value = metrics.f1_score([gold], [predicted], mode="strict", scheme=scheme.IOB2)
            assert value == pytest.approx(strict)
