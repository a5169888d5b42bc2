"""Coreference documents from CoNLL-2012 (OntoNotes 5.0) ``*_conll`` files.

One example per document *part* (``#begin document (<id>); part <nnn>``), the unit the official
scorer and Lee et al. (2017) use (e2e-coref's ``doc_key`` = ``<id>_<part>``). Clusters are
document-level inclusive token spans in the reference scorer's order (see
:mod:`tasks.common.conll2012`); speakers (column 10) and genre (first path component of the id) are
kept for the speaker and genre features of Lee et al. (2017).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.common.conll2012 import Document, Mention, read_documents
from tasks.common.io import DataError, ReadStats, require_datasets

if TYPE_CHECKING:
    import datasets

__all__ = [
    "EXPECTED_DOCUMENTS",
    "HF_CONFIG",
    "HF_DATASET",
    "CorefDocument",
    "CorefNotAvailable",
    "coref_documents",
    "hf_rows_to_conll",
    "load_split",
    "read_coref",
    "split_files",
    "to_hf_dataset",
]

logger = logging.getLogger(__name__)

HF_DATASET = "conll2012_ontonotesv5"
HF_CONFIG = "english_v4"
#: e2e-coref ``setup_training.sh`` names; a folder may instead hold ``train/``, ``development/``
#: (or ``dev/``) and ``test/`` trees of ``*_gold_conll`` files (the CoNLL-2012 v4 layout).
SPLIT_FOLDERS = {"train": ("train",), "dev": ("development", "dev"), "test": ("test",)}
#: English CoNLL-2012 document parts per split (TASKS_SPEC §3.4 [R], the standard split): a
#: different count is logged as a warning, as it changes the numbers (wrong folder, v12 test …).
EXPECTED_DOCUMENTS = {"train": 2802, "dev": 343, "test": 348}


class CorefNotAvailable(RuntimeError):
    """No local ``*_gold_conll`` files for a split and the Hugging Face Hub is unreachable."""


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
        path: the file it was read from (the key whose lines a response file copies).
        line: 1-based line of its ``#begin document`` header.
    """

    document_id: str
    part: int
    genre: str
    sentences: tuple[tuple[str, ...], ...]
    speakers: tuple[tuple[str, ...], ...]
    clusters: tuple[tuple[Mention, ...], ...]
    path: str = ""
    line: int = 0

    @property
    def key(self) -> tuple[str, int]:
        """``(document_id, part)``: how the scorer pairs key and response documents."""
        return (self.document_id, self.part)

    @property
    def num_tokens(self) -> int:
        """Tokens in the part."""
        return sum(len(words) for words in self.sentences)

    def sentence_starts(self) -> list[int]:
        """Document-level index of each sentence's first token."""
        starts, total = [], 0
        for words in self.sentences:
            starts.append(total)
            total += len(words)
        return starts

    def crossing_mentions(self) -> list[Mention]:
        """Gold mentions that span a sentence boundary: no candidate span can match them
        (Lee et al. 2017 enumerate spans inside sentences), so they count as missed."""
        sentence_of = [i for i, words in enumerate(self.sentences) for _ in words]
        return [
            (s, e)
            for cluster in self.clusters
            for s, e in cluster
            if sentence_of[s] != sentence_of[e]
        ]

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
            path=document.path,
            line=document.line,
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


def split_files(folder: str | Path, split: str) -> list[Path]:
    """The ``*_gold_conll`` files of ``split`` under ``folder`` (sorted; ``[]`` when none).

    Looked up in this order: files named ``<split>.*gold_conll`` directly in the folder (e2e-coref's
    ``train.english.v4_gold_conll``; the DEMO set's ``train.demo_gold_conll``), then every
    ``*_gold_conll`` below ``train/``, ``development/`` or ``dev/``, ``test/`` (only those under an
    ``english`` folder when there is one). ``*_auto_conll`` files are never read.
    """
    root = Path(folder)
    direct = sorted(p for p in root.glob(f"{split}.*gold_conll") if p.is_file())
    if direct:
        return direct
    for name in SPLIT_FOLDERS[split]:
        tree = root / name
        if tree.is_dir():
            files = sorted(p for p in tree.rglob("*_gold_conll") if p.is_file())
            english = [p for p in files if "english" in p.relative_to(tree).parts]
            return english or files
    return []


def load_split(
    split: str,
    data_dir: str | Path,
    stats: ReadStats | None = None,
    max_tokens: int | None = None,
    cache_dir: str | Path | None = None,
) -> list[CorefDocument]:
    """The documents of one split, from local ``*_gold_conll`` files or the Hugging Face Hub.

    Args:
        split: ``train``, ``dev`` or ``test``.
        data_dir: the folder (see :func:`split_files`).
        stats: counts documents and, under ``"mention crossing a sentence"``, gold mentions no
            candidate span can match (kept in the key, so they count as missed).
        max_tokens: a document with more tokens raises :class:`DataError` (its header line).
        cache_dir: where Hub rows are converted to a CoNLL-2012 key file.

    Raises:
        DataError: malformed files, or a document longer than ``max_tokens``.
        CorefNotAvailable: no local files and the Hub cannot be reached (offline).
    """
    stats = stats if stats is not None else ReadStats()
    files = split_files(data_dir, split)
    if not files:
        files = [_hub_split(split, data_dir, cache_dir)]
    stats.source = ", ".join(str(file) for file in files)
    documents: list[CorefDocument] = []
    for file in files:
        for document in read_coref(file, stats):
            if max_tokens is not None and document.num_tokens > max_tokens:
                raise DataError(
                    document.path,
                    document.line,
                    f"document {document.document_id} part {document.part} has "
                    f"{document.num_tokens} tokens, more than the configured limit "
                    f"max_document_tokens={max_tokens}",
                )
            for _ in document.crossing_mentions():
                stats.skip("mention crossing a sentence", exempt=True)  # doc kept
            documents.append(document)
    expected = EXPECTED_DOCUMENTS.get(split)
    if expected is not None and len(documents) != expected and "demo" not in str(files[0]):
        logger.warning(
            "%s: %d %s documents, the standard English CoNLL-2012 split has %d",
            data_dir,
            len(documents),
            split,
            expected,
        )
    return documents


def load_splits(
    folder: str | Path, max_tokens: int | None
) -> tuple[dict[str, list[CorefDocument]], dict[str, ReadStats]]:
    """Train, dev and test (:func:`load_split`) and their statistics: with local files for any
    split, the splits that have them (test is optional); with none at all, the Hub's three.

    Returns:
        ``(splits, stats)``: split → documents; split → read statistics (every split's, read
        or not).
    """
    stats = {s: ReadStats() for s in ("train", "dev", "test")}
    local = any(split_files(folder, s) for s in stats)
    wanted = [s for s in stats if not local or s != "test" or split_files(folder, s)]
    return {s: load_split(s, folder, stats[s], max_tokens) for s in wanted}, stats


def _hub_split(split: str, data_dir: str | Path, cache_dir: str | Path | None) -> Path:
    """Convert the Hub's ``conll2012_ontonotesv5`` (``english_v4``) split to a key file."""
    ds = require_datasets()
    hf_split = {"dev": "validation"}.get(split, split)
    try:
        rows = ds.load_dataset(HF_DATASET, HF_CONFIG, split=hf_split)
    except (OSError, ConnectionError, TimeoutError, ValueError) as exc:
        raise CorefNotAvailable(
            f"CoNLL-2012 coreference {split!r} split is not available: no {split}.*gold_conll "
            f"file and no {'/'.join(SPLIT_FOLDERS[split])}/ folder of *_gold_conll files in "
            f"{data_dir}, and the Hugging Face Hub could not be reached for {HF_DATASET!r} "
            f"({HF_CONFIG}) ({type(exc).__name__}: {exc}). Supply the files with --data DIR, e.g. "
            "train.english.v4_gold_conll, dev.english.v4_gold_conll and "
            "test.english.v4_gold_conll as built by e2e-coref's setup_training.sh from "
            "OntoNotes 5.0 (LDC2013T19) and the CoNLL-2012 v4 scripts."
        ) from exc
    if cache_dir is None:
        from bilm.pretrained import cache_root

        cache_dir = cache_root() / "coref-hub"
    out = Path(cache_dir) / f"{split}.hf_english_v4_gold_conll"
    out.parent.mkdir(parents=True, exist_ok=True)
    hf_rows_to_conll(rows, out)
    return out


def hf_rows_to_conll(rows: Iterable[dict[str, Any]], out: str | Path) -> Path:
    """Write Hub rows (``document_id``; ``sentences`` with ``part_id``, ``words``, ``speaker``,
    ``coref_spans`` = sentence-level ``[cluster, start, end]``) as a CoNLL-2012 key file with
    12 columns (``-`` for the annotation layers coreference does not use)."""
    from tasks.coref.evaluate import encode_clusters

    lines: list[str] = []
    for row in rows:
        parts: dict[int, list[dict[str, Any]]] = {}
        for sentence in row["sentences"]:
            parts.setdefault(int(sentence["part_id"]), []).append(sentence)
        for part, sentences in sorted(parts.items()):
            clusters: dict[int, list[Mention]] = {}
            offset = 0
            for sentence in sentences:
                for cluster, start, end in sentence["coref_spans"]:
                    clusters.setdefault(int(cluster), []).append((offset + start, offset + end))
                offset += len(sentence["words"])
            column = encode_clusters(offset, list(clusters.values()))
            lines.append(f"#begin document ({row['document_id']}); part {part:03d}")
            token = 0
            for sentence in sentences:
                speaker = sentence.get("speaker") or "-"
                for i, word in enumerate(sentence["words"]):
                    fields = [row["document_id"], str(part), str(i), word, *["-"] * 5]
                    lines.append(" ".join([*fields, speaker.replace(" ", "_"), "*", column[token]]))
                    token += 1
                lines.append("")
            lines.append("#end document")
    Path(out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Path(out)


def documents_by_file(documents: Sequence[CorefDocument]) -> dict[str, list[CorefDocument]]:
    """Documents grouped by the file they came from (file order kept)."""
    grouped: dict[str, list[CorefDocument]] = {}
    for document in documents:
        grouped.setdefault(document.path, []).append(document)
    return grouped
