"""Labelled token spans and the tag schemes that encode them: IOB1, IOB2 (BIO), BIOUL, brackets.

Schemes (Tjong Kim Sang & Veenstra, 1999; Ratinov & Roth, 2009, §4.2):

* ``IOB1``: ``I-X`` everywhere in a chunk, ``B-X`` only where a chunk directly follows a chunk of
  the same type (CoNLL-2003 NER files, Peters et al. 2018 §4).
* ``IOB2`` (BIO): ``B-X`` on the first token of every chunk, ``I-X`` on the rest (the SRL tagger of
  He et al. 2017).
* ``BIOUL``: ``U-X`` for single-token chunks, else ``B-X I-X* L-X``.
* Brackets (CoNLL-2005/2012 props and ``*_conll`` columns): ``(X*`` opens, ``*)`` closes,
  ``(X*)`` is one token; spans may nest (:func:`spans_to_brackets`).

Readings of ill-formed sequences, one per function:

* :func:`conlleval_spans` is **conlleval's** reading (version 2004-01-26, ``startOfChunk`` /
  ``endOfChunk``), of any tag sequence, with :func:`split_tag`'s splitting; the NER metric uses
  exactly these rules. An ``I-X`` after ``O`` or after another type opens a chunk, ``B-PER I-LOC``
  is two chunks, ``S-``/``U-``/``L-`` have no rule.
* :func:`tags_to_spans` with ``IOB1`` or ``IOB2`` checks every tag against the scheme's prefixes,
  then reads the sequence as :func:`conlleval_spans` does, so the chunks scored by conlleval and
  the chunks decoded here are the same. With ``BIOUL``: ``B``/``U`` open, ``I``/``L`` continue an
  open chunk of the same type (else open one), ``L``/``U`` close.
* :func:`spans_to_tags` writes the canonical encoding, so :func:`convert` is lossless on valid
  sequences and keeps the spans of any sequence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SCHEMES",
    "Scheme",
    "Span",
    "chunk_ends",
    "chunk_starts",
    "conlleval_spans",
    "convert",
    "drop_overlapping",
    "is_valid",
    "spans_to_brackets",
    "spans_to_tags",
    "split_tag",
    "tags_to_spans",
]

Scheme = Literal["IOB1", "IOB2", "BIOUL"]
SCHEMES: tuple[Scheme, ...] = ("IOB1", "IOB2", "BIOUL")

_PREFIXES: dict[str, frozenset[str]] = {
    "IOB1": frozenset("BI"),
    "IOB2": frozenset("BI"),
    "BIOUL": frozenset("BILU"),
}
_NAMES = {"IOB1": "IOB1 (BIO, I-first)", "IOB2": "IOB2 (BIO)", "BIOUL": "BIOUL"}

# conlleval's startOfChunk / endOfChunk prefix pairs (prev, cur).
_START_PAIRS = frozenset(
    {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
)
_END_PAIRS = frozenset(
    {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
)


@dataclass(frozen=True, order=True)
class Span:
    """A labelled token span; ``start`` and ``end`` are **inclusive** token indices."""

    start: int
    end: int
    label: str


def split_tag(tag: str) -> tuple[str, str]:
    """Split a tag like conlleval: ``"B-ORG-X"`` → ``("B", "ORG-X")``, ``"O"`` → ``("O", "")``.

    The split is at the first hyphen; a type that Perl reads as false (``"0"``) becomes ``""``.
    """
    prefix, sep, chunk_type = tag.partition("-")
    if not sep:
        return tag, ""
    return prefix, "" if chunk_type == "0" else chunk_type


def chunk_starts(prev_prefix: str, prefix: str, prev_type: str, chunk_type: str) -> bool:
    """conlleval's ``startOfChunk``: does a chunk start at the current token?"""
    if (prev_prefix, prefix) in _START_PAIRS or prefix in ("[", "]"):
        return True
    return prefix not in ("O", ".") and prev_type != chunk_type


def chunk_ends(prev_prefix: str, prefix: str, prev_type: str, chunk_type: str) -> bool:
    """conlleval's ``endOfChunk``: did a chunk end at the previous token?"""
    if (prev_prefix, prefix) in _END_PAIRS or prev_prefix in ("[", "]"):
        return True
    return prev_prefix not in ("O", ".") and prev_type != chunk_type


def conlleval_spans(tags: Sequence[str]) -> list[Span]:
    """The chunks conlleval reads in one sentence, in order (any tags; nothing is rejected).

    >>> conlleval_spans(["O", "I-PER", "B-PER", "I-LOC"])
    [Span(start=1, end=1, label='PER'), Span(start=2, end=2, label='PER'), \
Span(start=3, end=3, label='LOC')]
    """
    return _conlleval_read([split_tag(tag) for tag in tags])


def _conlleval_read(pairs: Sequence[tuple[str, str]]) -> list[Span]:
    spans: list[Span] = []
    start: int | None = None
    prev_prefix, prev_type = "O", ""
    for i, (prefix, chunk_type) in enumerate(pairs):
        ends = chunk_ends(prev_prefix, prefix, prev_type, chunk_type)
        starts = chunk_starts(prev_prefix, prefix, prev_type, chunk_type)
        if start is not None and (ends or starts):
            spans.append(Span(start, i - 1, prev_type))
            start = None
        if starts:
            start = i
        prev_prefix, prev_type = prefix, chunk_type
    if start is not None:
        spans.append(Span(start, len(pairs) - 1, prev_type))
    return spans


def _check(scheme: str) -> None:
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown scheme {scheme!r}; valid: {', '.join(SCHEMES)}")


def _split(tag: str, scheme: str, position: int) -> tuple[str, str]:
    """``"B-PER"`` → ``("B", "PER")``, ``"O"`` → ``("O", "")``; ValueError if not in ``scheme``."""
    if tag == "O":
        return "O", ""
    prefix, sep, label = tag.partition("-")
    if not sep or not label or prefix not in _PREFIXES[scheme]:
        raise ValueError(f"{tag!r} at position {position} is not a {_NAMES[scheme]} tag")
    return prefix, label


def tags_to_spans(tags: Sequence[str], scheme: Scheme) -> list[Span]:
    """Decode a tag sequence into spans, in order (readings: see the module docstring).

    >>> tags_to_spans(["I-PER", "B-PER", "O", "I-LOC"], "IOB1")
    [Span(start=0, end=0, label='PER'), Span(start=1, end=1, label='PER'), \
Span(start=3, end=3, label='LOC')]

    Raises:
        ValueError: unknown scheme, or a tag is not ``O`` or ``P-TYPE`` with a prefix of ``scheme``.
    """
    _check(scheme)
    pairs = [_split(tag, scheme, i) for i, tag in enumerate(tags)]
    if scheme != "BIOUL":
        return _conlleval_read(pairs)
    spans: list[Span] = []
    start = 0
    current: str | None = None  # label of the open span
    for i, (prefix, label) in enumerate(pairs):
        continues = label == current and prefix in ("I", "L")
        if current is not None and not continues:
            spans.append(Span(start, i - 1, current))
            current = None
        if prefix != "O" and not continues:
            start, current = i, label
        if prefix in ("L", "U") and current is not None:
            spans.append(Span(start, i, current))
            current = None
    if current is not None:
        spans.append(Span(start, len(pairs) - 1, current))
    return spans


def spans_to_tags(length: int, spans: Iterable[Span], scheme: Scheme) -> list[str]:
    """Encode non-overlapping spans as the canonical tag sequence of ``scheme``.

    Raises:
        ValueError: unknown scheme, or spans overlap or fall outside ``[0, length)``.
    """
    _check(scheme)
    tags = ["O"] * length
    previous_end, previous_label = -1, None
    for span in sorted(spans):
        if not 0 <= span.start <= span.end < length or span.start <= previous_end:
            raise ValueError(f"span {span} overlaps another or is outside [0, {length})")
        width = span.end - span.start + 1
        if scheme == "IOB1":
            adjacent = span.start == previous_end + 1 and span.label == previous_label
            body = ["B" if adjacent else "I"] + ["I"] * (width - 1)
        elif scheme == "IOB2":
            body = ["B"] + ["I"] * (width - 1)
        else:
            body = ["U"] if width == 1 else ["B"] + ["I"] * (width - 2) + ["L"]
        tags[span.start : span.end + 1] = [f"{prefix}-{span.label}" for prefix in body]
        previous_end, previous_label = span.end, span.label
    return tags


def convert(tags: Sequence[str], source: Scheme, target: Scheme) -> list[str]:
    """Re-encode ``tags`` from ``source`` to ``target`` keeping the spans.

    >>> convert(["I-PER", "B-PER", "O", "I-LOC"], "IOB1", "BIOUL")
    ['U-PER', 'U-PER', 'O', 'U-LOC']
    """
    return spans_to_tags(len(tags), tags_to_spans(tags, source), target)


def is_valid(tags: Sequence[str], scheme: Scheme) -> bool:
    """Whether ``tags`` is a well-formed ``scheme`` sequence (its own canonical encoding)."""
    try:
        return convert(tags, scheme, scheme) == list(tags)
    except ValueError:
        return False


def drop_overlapping(spans: Iterable[Span]) -> tuple[list[Span], int]:
    """Keep spans outer first, left to right; drop each that overlaps one already kept.

    Returns:
        ``(kept spans sorted by start, number dropped)``: what a flat scheme can encode of nested
        spans (the SRL reader keeps the outer argument).
    """
    kept: list[Span] = []
    dropped = 0
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if kept and span.start <= max(k.end for k in kept):
            dropped += 1
            continue
        kept.append(span)
    return kept, dropped


def spans_to_brackets(length: int, spans: Iterable[Span]) -> list[str]:
    """Write labelled spans as one bracketed column (``(A0*``, ``*``, ``*)``, ``(V*)``).

    Nested spans are written outer first; the inverse of the CoNLL-2012 column parsing.

    Raises:
        ValueError: a span lies outside ``[0, length)`` or two spans cross (overlap, not nested).
    """
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    opens: list[list[str]] = [[] for _ in range(length)]
    closes = [0] * length
    stack: list[Span] = []
    for span in ordered:
        if not 0 <= span.start <= span.end < length:
            raise ValueError(f"span {span} outside a sentence of {length} tokens")
        while stack and stack[-1].end < span.start:
            stack.pop()
        if stack and span.end > stack[-1].end:
            raise ValueError(f"spans {stack[-1]} and {span} cross; brackets cannot encode them")
        stack.append(span)
        opens[span.start].append(span.label)
        closes[span.end] += 1
    return [
        "".join(f"({label}" for label in opens[i]) + "*" + ")" * closes[i] for i in range(length)
    ]
