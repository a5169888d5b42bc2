"""Tag schemes <-> spans: round trips, conversions, ill-formed sequences, conlleval's reading."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.common.spans import (
    SCHEMES,
    Span,
    conlleval_spans,
    convert,
    drop_overlapping,
    is_valid,
    spans_to_brackets,
    spans_to_tags,
    tags_to_spans,
)

LABELS = st.sampled_from(["PER", "LOC", "ORG", "MISC"])


@st.composite
def spanned_sequences(draw: st.DrawFn) -> tuple[list[Span], int]:
    """Random non-overlapping spans (adjacent same-type spans included) over a sentence."""
    spans: list[Span] = []
    position = 0
    for _ in range(draw(st.integers(0, 8))):
        position += draw(st.integers(0, 2))  # gap of 0 makes adjacent spans
        width = draw(st.integers(1, 3))
        spans.append(Span(position, position + width - 1, draw(LABELS)))
        position += width
    return spans, position + draw(st.integers(0, 2))


@given(spanned_sequences(), st.sampled_from(SCHEMES), st.sampled_from(SCHEMES))
def test_round_trips_are_identity_and_keep_spans(
    sample: tuple[list[Span], int], source: str, target: str
) -> None:
    spans, length = sample
    tags = spans_to_tags(length, spans, source)  # type: ignore[arg-type]
    assert is_valid(tags, source)  # type: ignore[arg-type]
    assert tags_to_spans(tags, source) == spans  # type: ignore[arg-type]
    converted = convert(tags, source, target)  # type: ignore[arg-type]
    assert is_valid(converted, target)  # type: ignore[arg-type]
    assert tags_to_spans(converted, target) == spans  # type: ignore[arg-type]
    assert convert(converted, target, source) == tags  # type: ignore[arg-type]


ANY_TAGS = st.lists(
    st.sampled_from(["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "L-PER", "U-PER", "L-LOC"]),
    max_size=12,
)


@given(ANY_TAGS, st.sampled_from(SCHEMES))
def test_conversion_keeps_spans_of_any_sequence(tags: list[str], target: str) -> None:
    source = "BIOUL"  # the widest vocabulary: every sampled tag is a BIOUL tag
    spans = tags_to_spans(tags, source)
    assert tags_to_spans(convert(tags, source, target), target) == spans  # type: ignore[arg-type]


def test_known_conversions() -> None:
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "B-ORG"]
    assert convert(iob1, "IOB1", "IOB2") == [
        "B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "B-ORG",
    ]  # fmt: skip
    assert convert(iob1, "IOB1", "BIOUL") == [
        "B-PER", "L-PER", "U-PER", "O", "U-LOC", "U-ORG", "U-ORG",
    ]  # fmt: skip
    assert tags_to_spans(iob1, "IOB1") == [
        Span(0, 1, "PER"), Span(2, 2, "PER"), Span(4, 4, "LOC"), Span(5, 5, "ORG"),
        Span(6, 6, "ORG"),
    ]  # fmt: skip
    # Invalid IOB2 (I- after O) is decoded leniently, like conlleval.
    assert tags_to_spans(["O", "I-PER", "I-PER"], "IOB2") == [Span(1, 2, "PER")]
    assert not is_valid(["O", "I-PER"], "IOB2") and is_valid(["O", "I-PER"], "IOB1")
    assert not is_valid(["B-PER", "O"], "BIOUL") and not is_valid(["B-PER"], "IOB1")
    with pytest.raises(ValueError):
        convert(["U-PER"], "IOB2", "IOB1")
    with pytest.raises(ValueError):
        spans_to_tags(3, [Span(0, 1, "PER"), Span(1, 2, "LOC")], "IOB2")
    with pytest.raises(ValueError, match="unknown scheme"):
        tags_to_spans(["O"], "BIOES")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("tags", "spans"),
    [
        (["B-A0", "I-A0", "O", "B-V"], [Span(0, 1, "A0"), Span(3, 3, "V")]),
        (["I-A0", "I-A0", "B-A0"], [Span(0, 1, "A0"), Span(2, 2, "A0")]),  # I- after nothing
        (["B-A0", "I-A1", "I-A1"], [Span(0, 0, "A0"), Span(1, 2, "A1")]),  # I- of another label
        (["O", "I-C-A1"], [Span(1, 1, "C-A1")]),  # types may contain hyphens
        (
            ["B-PER", "I-LOC", "O", "I-PER"],
            [Span(0, 0, "PER"), Span(1, 1, "LOC"), Span(3, 3, "PER")],
        ),
        ([], []),
    ],
)
def test_ill_formed_bio_is_read_leniently(tags: list[str], spans: list[Span]) -> None:
    assert tags_to_spans(tags, "IOB2") == spans
    assert tags_to_spans(tags, "IOB1") == spans
    assert conlleval_spans(tags) == spans


def test_ill_formed_bioul() -> None:
    # L- without B- opens and closes; I- of another type opens; B- left open runs to the end.
    tags = ["L-PER", "B-LOC", "I-PER", "L-PER", "B-ORG"]
    assert tags_to_spans(tags, "BIOUL") == [
        Span(0, 0, "PER"), Span(1, 1, "LOC"), Span(2, 3, "PER"), Span(4, 4, "ORG"),
    ]  # fmt: skip
    # conlleval has no U-/L- rule: the same tags read as conlleval would score them.
    assert conlleval_spans(["U-PER", "U-PER"]) == [Span(0, 1, "PER")]


@pytest.mark.parametrize("bad", ["X-A0", "B-", "b-A0", "", "U-A0"])
def test_non_bio_tags_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="BIO"):
        tags_to_spans(["O", bad], "IOB2")


def _brute_force_iob(tags: list[str]) -> list[Span]:
    """Handmade reading: a span starts at B-X, or at I-X unless the previous tag is B-X/I-X."""
    spans: list[Span] = []
    for i, tag in enumerate(tags):
        if tag == "O":
            continue
        prefix, label = tag.split("-", 1)
        previous = tags[i - 1] if i else "O"
        if prefix == "B" or previous == "O" or previous.split("-", 1)[1] != label:
            end = i
            while end + 1 < len(tags) and tags[end + 1] == f"I-{label}":
                end += 1
            spans.append(Span(i, end, label))
    return spans


def test_iob_reading_matches_brute_force_on_every_short_sequence() -> None:
    vocabulary = ["O", "B-A", "I-A", "B-B", "I-B"]
    for length in range(5):
        for tags in itertools.product(vocabulary, repeat=length):
            expected = _brute_force_iob(list(tags))
            assert tags_to_spans(tags, "IOB1") == expected, tags
            assert conlleval_spans(tags) == expected, tags


def test_drop_overlapping_keeps_outer_spans() -> None:
    spans = [Span(0, 2, "A1"), Span(1, 1, "A2"), Span(3, 3, "V"), Span(2, 4, "X")]
    kept, dropped = drop_overlapping(spans)
    assert (kept, dropped) == ([Span(0, 2, "A1"), Span(3, 3, "V")], 2)
    assert tuple(spans_to_tags(5, kept, "IOB2")) == ("B-A1", "I-A1", "I-A1", "B-V", "O")


def test_spans_to_brackets_nesting_and_crossing() -> None:
    spans = [Span(0, 0, "A2"), Span(0, 3, "A1"), Span(2, 3, "A3")]
    assert spans_to_brackets(4, spans) == ["(A1(A2*)", "*", "(A3*", "*))"]
    with pytest.raises(ValueError, match="cross"):
        spans_to_brackets(4, [Span(0, 2, "A"), Span(1, 3, "B")])
    with pytest.raises(ValueError, match="outside"):
        spans_to_brackets(2, [Span(1, 2, "A")])
