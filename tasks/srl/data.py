"""SRL instances from CoNLL-2012 (OntoNotes 5.0): one BIO-tagged instance per predicate.

He et al. (2017), the SRL baseline of Peters et al. (2018) §4, tag every predicate of a sentence
separately: the input is the sentence plus the predicate position, the output one BIO tag per token
(``B-ARG0``, ``I-ARG0``, ``B-V``, ``O`` …). Continuation (``C-ARG1``) and reference (``R-ARG0``)
arguments keep their labels; the scorer (:mod:`tasks.srl.metric`) merges ``C-`` pieces as
srl-eval.pl does.

Dropped, and counted in :class:`~tasks.common.io.ReadStats`:

* ``no_predicate_sentence``: sentences without predicate columns (allennlp emits an all-``O``
  instance for them; they add nothing to srl-eval counts, but change instance counts).
* ``frame_without_V``: a predicate column without a ``V`` span (no predicate position to give).
* ``nested_argument``: an argument nested inside another of the same frame (BIO cannot encode it;
  the outer one is kept). Gold props written by :mod:`tasks.srl.evaluate` keep it, so scores stay
  honest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.common.conll2012 import Sentence, Span, read_sentences
from tasks.common.io import ReadStats, require_datasets

if TYPE_CHECKING:
    import datasets

__all__ = [
    "SrlInstance",
    "bio_to_spans",
    "read_srl",
    "spans_to_bio",
    "srl_instances",
    "to_hf_dataset",
]


@dataclass(frozen=True)
class SrlInstance:
    """One predicate of one sentence.

    Attributes:
        sentence_id: 0-based position of the sentence in the read order, predicate-less sentences
            included (unique even when two files share a document id); ties the instance back to the
            sentence for the props writer.
        tokens: the sentence's words.
        predicate_index: token index of the predicate (the ``V`` span start).
        tags: BIO tags, one per token, ``V`` included.
        genre: first path component of the document id.
    """

    sentence_id: int
    tokens: tuple[str, ...]
    predicate_index: int
    tags: tuple[str, ...]
    genre: str


def spans_to_bio(length: int, spans: Sequence[Span]) -> tuple[tuple[str, ...], int]:
    """BIO tags for labelled spans; spans nested in (or crossing) an earlier span are dropped.

    Returns:
        ``(tags, number_of_dropped_spans)``. Spans are placed outer first, left to right.
    """
    tags = ["O"] * length
    dropped = 0
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if any(tag != "O" for tag in tags[span.start : span.end + 1]):
            dropped += 1
            continue
        tags[span.start] = f"B-{span.label}"
        for i in range(span.start + 1, span.end + 1):
            tags[i] = f"I-{span.label}"
    return tuple(tags), dropped


def bio_to_spans(tags: Sequence[str]) -> list[Span]:
    """Labelled spans of a BIO sequence, read leniently as conlleval does.

    ``B-X`` starts a span; ``I-X`` continues a span of label ``X`` and otherwise starts one (an
    ``I-`` after ``O`` or after another label, as a tagger without constrained decoding may
    produce); ``O`` ends it.

    Raises:
        ValueError: a tag is not ``O``, ``B-…`` or ``I-…``.
    """
    spans: list[Span] = []
    label: str | None = None
    start = 0
    for i, tag in enumerate(tags):
        if tag == "O":
            prefix, current = "O", None
        elif tag[:2] in ("B-", "I-") and len(tag) > 2:
            prefix, current = tag[0], tag[2:]
        else:
            raise ValueError(f"not a BIO tag: {tag!r} at position {i}")
        continues = prefix == "I" and current == label
        if label is not None and not continues:
            spans.append(Span(start, i - 1, label))
            label = None
        if current is not None and not continues:
            label, start = current, i
    if label is not None:
        spans.append(Span(start, len(tags) - 1, label))
    return spans


def srl_instances(
    sentences: Iterable[Sentence], stats: ReadStats | None = None
) -> Iterator[SrlInstance]:
    """One :class:`SrlInstance` per predicate column with a ``V`` span (see module docstring)."""
    stats = stats if stats is not None else ReadStats()
    for sentence_id, sentence in enumerate(sentences):
        if not sentence.srl_frames:
            stats.skip("no_predicate_sentence")
            continue
        for frame in sentence.srl_frames:
            if frame.predicate_index is None:
                stats.skip("frame_without_V")
                continue
            tags, dropped = spans_to_bio(len(sentence), frame.arguments)
            for _ in range(dropped):
                stats.skip("nested_argument")
            stats.examples += 1
            yield SrlInstance(
                sentence_id=sentence_id,
                tokens=sentence.words,
                predicate_index=frame.predicate_index,
                tags=tags,
                genre=sentence.document_id.split("/", 1)[0],
            )


def read_srl(path: str | Path, stats: ReadStats | None = None) -> Iterator[SrlInstance]:
    """Stream SRL instances from a CoNLL-2012 file or directory (``*_conll`` files, recursively).

    Raises:
        DataError: malformed input (file and line given).
    """
    return srl_instances(read_sentences(path), stats)


def to_hf_dataset(path: str | Path) -> datasets.Dataset:
    """The instances of :func:`read_srl` as an in-memory Hugging Face ``datasets.Dataset``.

    Columns: ``sentence_id``, ``tokens``, ``predicate_index``, ``tags``, ``genre``.
    """
    datasets = require_datasets()
    rows: list[dict[str, Any]] = [
        {
            "sentence_id": instance.sentence_id,
            "tokens": list(instance.tokens),
            "predicate_index": instance.predicate_index,
            "tags": list(instance.tags),
            "genre": instance.genre,
        }
        for instance in read_srl(path)
    ]
    features = datasets.Features(
        {
            "sentence_id": datasets.Value("int64"),
            "tokens": datasets.Sequence(datasets.Value("string")),
            "predicate_index": datasets.Value("int64"),
            "tags": datasets.Sequence(datasets.Value("string")),
            "genre": datasets.Value("string"),
        }
    )
    return datasets.Dataset.from_list(rows, features=features)
