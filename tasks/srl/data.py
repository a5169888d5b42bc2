"""SRL instances from CoNLL-2012 (OntoNotes 5.0): one BIO-tagged instance per predicate.

He et al. (2017), the SRL baseline of Peters et al. (2018) §4, tag every predicate of a sentence
separately: the input is the sentence plus the predicate position, the output one BIO tag per token
(``B-ARG0``, ``I-ARG0``, ``B-V``, ``O`` …; see :mod:`tasks.common.spans`). Continuation
(``C-ARG1``) and reference (``R-ARG0``) arguments keep their labels; the scorer
(:mod:`tasks.srl.metric`) merges ``C-`` pieces as srl-eval.pl does.

Dropped, and counted in :class:`~tasks.common.io.ReadStats`:

* ``no_predicate_sentence``: sentences without predicate columns (allennlp emits an all-``O``
  instance for them; they add nothing to srl-eval counts, but change instance counts).
* ``frame_without_V``: a predicate column without a ``V`` span (no predicate position to give).
* ``nested_argument``: an argument nested inside another of the same frame (BIO cannot encode it;
  the outer one is kept). Gold props written by :mod:`tasks.srl.evaluate` keep it, so scores stay
  honest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.common.conll2012 import Sentence, read_sentences
from tasks.common.io import ReadStats, require_datasets
from tasks.common.spans import drop_overlapping, spans_to_tags

if TYPE_CHECKING:
    import datasets

__all__ = [
    "SrlInstance",
    "read_srl",
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
            arguments, dropped = drop_overlapping(frame.arguments)
            tags = tuple(spans_to_tags(len(sentence), arguments, "IOB2"))
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
