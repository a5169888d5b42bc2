"""Coreference documents from CoNLL-2012 (OntoNotes 5.0) ``*_conll`` files.

One example per document *part* (``#begin document (<id>); part <nnn>``), the unit the official
scorer and Lee et al. (2017) use (e2e-coref's ``doc_key`` = ``<id>_<part>``). Clusters are
document-level inclusive token spans in the reference scorer's order (see
:mod:`tasks.common.conll2012`); speakers (column 10) and genre (first path component of the id) are
kept for the speaker and genre features of Lee et al. (2017).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.common.conll2012 import Document, Mention, read_documents
from tasks.common.io import ReadStats, require_datasets

if TYPE_CHECKING:
    import datasets

__all__ = ["CorefDocument", "coref_documents", "read_coref", "to_hf_dataset"]


@dataclass(frozen=True)
class CorefDocument:
    """One document part.

    Attributes:
        document_id: id from the ``#begin document`` header.
        part: part number.
        genre: first path component of the id (bc, bn, mz, nw, pt, tc, wb).
        sentences: words per sentence.
        speakers: speaker per token, per sentence (``-`` where none).
        clusters: mentions ``(start, end)`` (document-level, inclusive) per cluster.
    """

    document_id: str
    part: int
    genre: str
    sentences: tuple[tuple[str, ...], ...]
    speakers: tuple[tuple[str, ...], ...]
    clusters: tuple[tuple[Mention, ...], ...]

    @property
    def doc_key(self) -> str:
        """``<id>_<part>``, the key e2e-coref uses."""
        return f"{self.document_id}_{self.part}"


def coref_documents(
    documents: Iterable[Document], stats: ReadStats | None = None
) -> Iterator[CorefDocument]:
    """Convert reader documents; every part is kept (a part without clusters is a valid example)."""
    stats = stats if stats is not None else ReadStats()
    for document in documents:
        stats.examples += 1
        yield CorefDocument(
            document_id=document.document_id,
            part=document.part,
            genre=document.genre,
            sentences=tuple(sentence.words for sentence in document.sentences),
            speakers=tuple(sentence.speakers for sentence in document.sentences),
            clusters=document.clusters,
        )


def read_coref(path: str | Path, stats: ReadStats | None = None) -> Iterator[CorefDocument]:
    """Stream coreference documents from a CoNLL-2012 file or directory (``*_conll``, recursive).

    Raises:
        DataError: malformed input (file and line given).
    """
    return coref_documents(read_documents(path), stats)


def to_hf_dataset(path: str | Path) -> datasets.Dataset:
    """The documents of :func:`read_coref` as an in-memory Hugging Face ``datasets.Dataset``.

    Columns: ``doc_key``, ``document_id``, ``part``, ``genre``, ``sentences``, ``speakers`` and
    ``clusters`` (a list of clusters, each a list of ``[start, end]``).
    """
    datasets = require_datasets()
    rows: list[dict[str, Any]] = [
        {
            "doc_key": document.doc_key,
            "document_id": document.document_id,
            "part": document.part,
            "genre": document.genre,
            "sentences": [list(words) for words in document.sentences],
            "speakers": [list(speakers) for speakers in document.speakers],
            "clusters": [[list(mention) for mention in cluster] for cluster in document.clusters],
        }
        for document in read_coref(path)
    ]
    string_lists = datasets.Sequence(datasets.Sequence(datasets.Value("string")))
    features = datasets.Features(
        {
            "doc_key": datasets.Value("string"),
            "document_id": datasets.Value("string"),
            "part": datasets.Value("int64"),
            "genre": datasets.Value("string"),
            "sentences": string_lists,
            "speakers": string_lists,
            "clusters": datasets.Sequence(
                datasets.Sequence(datasets.Sequence(datasets.Value("int64")))
            ),
        }
    )
    return datasets.Dataset.from_list(rows, features=features)
