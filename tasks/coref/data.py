"""Coreference documents from CoNLL-2012 (OntoNotes 5.0) ``*_conll`` or LitBank ``*.conll`` files.

One example per document *part* (``#begin document (<id>); part <nnn>``), the unit the official
scorer and Lee et al. (2017) use (e2e-coref's ``doc_key`` = ``<id>_<part>``). Clusters are
document-level inclusive token spans in the reference scorer's order (see
:mod:`tasks.common.conll2012`); speakers (column 10) and genre (first path component of the id) are
kept for the speaker and genre features of Lee et al. (2017). Only the columns coreference reads
are validated (``layers="coreference"``: document, word, speaker and the last column, as
e2e-coref's ``minimize.py``); the word index, named entities and predicate-argument columns may
hold anything (a corpus that writes scene time stamps there reads as one with ``*``).

A ``--data`` folder is read in one of the :data:`LAYOUTS`; train and dev must be there, test is
optional, and the Hugging Face Hub is never consulted for a folder (only :func:`load_split` with
``hub=True`` asks it). LitBank (Bamman et al. 2020) annotates singletons, OntoNotes does not: they
are kept as written and scored as the reference scorer does (B³ and CEAF-e count them, MUC cannot);
the variant line of the read statistics gives their number.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.common.conll2012 import ConllStyle, Document, Mention, read_documents
from tasks.common.io import DataError, ReadStats, require_datasets

if TYPE_CHECKING:
    import datasets

__all__ = [
    "EXPECTED_DOCUMENTS",
    "GENRES",
    "HF_CONFIG",
    "HF_DATASET",
    "LAYOUTS",
    "CorefDocument",
    "CorefNotAvailable",
    "coref_documents",
    "folder_files",
    "hf_rows_to_conll",
    "load_split",
    "load_splits",
    "read_coref",
    "split_files",
    "to_hf_dataset",
]

logger = logging.getLogger(__name__)

HF_DATASET = "conll2012_ontonotesv5"
HF_CONFIG = "english_v4"
#: e2e-coref ``setup_training.sh`` names; a folder may instead hold ``train/``, ``development/``
#: (or ``dev/``) and ``test/`` trees of ``*_gold_conll`` files (the CoNLL-2012 v4 layout) or of
#: ``*.conll`` files (LitBank).
SPLIT_FOLDERS = {"train": ("train",), "dev": ("development", "dev"), "test": ("test",)}
#: The layouts of a data folder (:func:`split_files`), as the error for a missing split lists them.
LAYOUTS = (
    "train/dev/test.*gold_conll files in the folder (e2e-coref: train.english.v4_gold_conll, "
    "dev.english.v4_gold_conll, test.english.v4_gold_conll)",
    "train/, development/ (or dev/), test/ trees of *_gold_conll files (CoNLL-2012 v4, English)",
    "train/, dev/ (or development/), test/ folders of *.conll files (LitBank)",
)
#: English CoNLL-2012 document parts per split (the standard split; counts not verified against a
#: published source, docs/reference/coref.md): a different count is logged as a warning, as it
#: changes the numbers (wrong folder, v12 test …).
EXPECTED_DOCUMENTS = {"train": 2802, "dev": 343, "test": 348}


class CorefNotAvailable(RuntimeError):
    """``load_split(..., hub=True)`` found no local files and the Hugging Face Hub is
    unreachable."""


#: OntoNotes genres (first component of the document id); id 0 = any other genre.
GENRES = ("bc", "bn", "mz", "nw", "pt", "tc", "wb")


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
    """Stream coreference documents from a CoNLL-2012 file or directory (``*_conll``, recursive);
    only the columns coreference reads are validated (see the module docstring).

    Raises:
        DataError: malformed input (file and line given).
    """
    return coref_documents(read_documents(path, layers="coreference"), stats)


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
    """The ``*_gold_conll`` (or LitBank ``*.conll``) files of ``split`` under ``folder`` (sorted;
    ``[]`` when none).

    Looked up in this order: files named ``<split>.*gold_conll`` directly in the folder (e2e-coref's
    ``train.english.v4_gold_conll``; the DEMO set's ``train.demo_gold_conll``), then every
    ``*_gold_conll`` below ``train/``, ``development/`` or ``dev/``, ``test/`` (only those under an
    ``english`` folder when there is one), else every ``*.conll`` below that folder (LitBank's
    ``train/1023_bleak_house_brat.conll``). ``*_auto_conll`` files are never read.
    """
    root = Path(folder)
    direct = sorted(p for p in root.glob(f"{split}.*gold_conll") if p.is_file())
    if direct:
        return direct
    for name in SPLIT_FOLDERS[split]:
        tree = root / name
        if tree.is_dir():
            files = sorted(p for p in tree.rglob("*_gold_conll") if p.is_file())
            if not files:
                return sorted(p for p in tree.rglob("*.conll") if p.is_file())
            english = [p for p in files if "english" in p.relative_to(tree).parts]
            return english or files
    return []


def folder_files(folder: str | Path) -> list[Path]:
    """Every file :func:`load_splits` reads from a data folder: the files of train, dev and,
    when the folder has it, test (:func:`split_files`), found without reading any.

    Raises:
        DataError: no train or no dev files (naming the folder, what was looked for and the
            layouts).
    """
    files: list[Path] = []
    for split in ("train", "dev", "test"):
        found = split_files(folder, split)
        if not found and split != "test":
            raise missing_split_error(split, folder)
        files.extend(found)
    return files


def missing_split_error(split: str, folder: str | Path) -> DataError:
    """The error for a folder without files for ``split``: what was looked for, and the layouts."""
    trees = " or ".join(f"{name}/" for name in SPLIT_FOLDERS[split])
    layouts = "; ".join(f"({i}) {layout}" for i, layout in enumerate(LAYOUTS, start=1))
    return DataError(
        folder,
        None,
        f"no {split} split: looked for {split}.*gold_conll in the folder and for *_gold_conll or "
        f"*.conll files under {trees}; accepted layouts: {layouts}. The Hugging Face Hub is not "
        "consulted when a data folder is given",
    )


def load_split(
    split: str,
    data_dir: str | Path,
    stats: ReadStats | None = None,
    max_tokens: int | None = None,
    cache_dir: str | Path | None = None,
    *,
    hub: bool = False,
) -> list[CorefDocument]:
    """The documents of one split, from local files (see :func:`split_files`).

    Args:
        split: ``train``, ``dev`` or ``test``.
        data_dir: the folder (see :func:`split_files`).
        stats: counts documents and, under ``"mention crossing a sentence"``, gold mentions no
            candidate span can match (kept in the key, so they count as missed); its ``source``
            names the files and its ``variant`` the layout, placeholders and singleton chains.
        max_tokens: a document with more tokens raises :class:`DataError` (its header line).
        cache_dir: where Hub rows are converted to a CoNLL-2012 key file.
        hub: without local files, convert the Hugging Face Hub's ``conll2012_ontonotesv5``
            split instead of raising (only when asked for explicitly).

    Raises:
        DataError: no files for the split (without ``hub``), malformed files, or a document
            longer than ``max_tokens``.
        CorefNotAvailable: ``hub`` is set, there are no local files and the Hub cannot be
            reached (offline).
    """
    stats = stats if stats is not None else ReadStats()
    files = split_files(data_dir, split)
    from_hub = not files
    if from_hub:
        if not hub:
            raise missing_split_error(split, data_dir)
        files = [_hub_split(split, data_dir, cache_dir)]
    stats.source, layout = (
        (str(files[0]), f"Hugging Face Hub {HF_DATASET} ({HF_CONFIG})")
        if from_hub
        else _layout(data_dir, files)
    )
    documents, style = _read_files(files, stats, max_tokens)
    stats.variant = f"{layout}, {style.describe()}, {_chain_counts(documents)}"
    expected = EXPECTED_DOCUMENTS.get(split)
    ontonotes = files[0].name.endswith("gold_conll") and "demo" not in str(files[0])
    if expected is not None and len(documents) != expected and ontonotes:
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
    """Train, dev and, when the folder has it, test (:func:`load_split`, never the Hub) and
    their statistics.

    Args:
        folder: the data folder (one of the :data:`LAYOUTS`).
        max_tokens: the limit on training documents; dev and test documents are never refused
            for their length.

    Returns:
        ``(splits, stats)``: split → documents; split → read statistics (every split's, read
        or not).

    Raises:
        DataError: no train or no dev files (naming the folder and the layouts), or bad input.
    """
    stats = {s: ReadStats() for s in ("train", "dev", "test")}
    wanted = [s for s in stats if s != "test" or split_files(folder, s)]
    return {
        s: load_split(s, folder, stats[s], max_tokens if s == "train" else None) for s in wanted
    }, stats


def _read_files(
    files: Sequence[Path], stats: ReadStats, max_tokens: int | None
) -> tuple[list[CorefDocument], ConllStyle]:
    """The documents of ``files`` and the style they are written in (see :func:`load_split`)."""
    documents: list[CorefDocument] = []
    styles: list[ConllStyle] = []
    for file in files:
        read = read_documents(file, layers="coreference")
        for document in coref_documents(_styles_of(read, styles), stats):
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
    return documents, ConllStyle.combine(styles)


def _styles_of(documents: Iterable[Document], styles: list[ConllStyle]) -> Iterator[Document]:
    """Pass ``documents`` through, appending each one's style to ``styles``."""
    for document in documents:
        styles.append(document.style)
        yield document


def _layout(folder: str | Path, files: Sequence[Path]) -> tuple[str, str]:
    """``(source, layout)``: the files (or the split's folder) and which of the :data:`LAYOUTS`
    ``files`` follow, in words."""
    root = Path(folder)
    if all(file.parent == root for file in files):
        return ", ".join(str(file) for file in files), "file " + ", ".join(f.name for f in files)
    tree = files[0].relative_to(root).parts[0]
    source = f"{root / tree}/"
    if files[0].name.endswith(".conll"):
        return source, f"LitBank layout: {tree}/ folder of {len(files)} *.conll files"
    return source, f"CoNLL-2012 v4 layout: {tree}/ tree of {len(files)} *_gold_conll files"


def _chain_counts(documents: Sequence[CorefDocument]) -> str:
    """Mentions, chains and singleton chains (one distinct mention) of ``documents``."""
    chains = [cluster for document in documents for cluster in document.clusters]
    mentions = sum(len(cluster) for cluster in chains)
    singletons = sum(1 for cluster in chains if len(set(cluster)) == 1)
    note = " (scored as the reference scorer does: in B3 and CEAF-e, not in MUC)"
    return (
        f"{len(documents):,} documents, {mentions:,} mentions in {len(chains):,} chains, "
        f"{singletons:,} singleton chains{note if singletons else ''}"
    )


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
