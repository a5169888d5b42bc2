"""Streaming reader for the CoNLL-2012 ``*_conll`` format (OntoNotes 5.0; Pradhan et al. 2012).

One reader serves semantic role labelling and coreference. A file holds document parts delimited
by ``#begin document (<id>); part <nnn>`` and ``#end document``; blank lines separate sentences;
each token line has whitespace-separated (or tab-separated) columns::

    1 doc id  2 part  3 word index  4 word  5 POS  6 parse bit  7 predicate lemma  8 frameset id
    9 word sense  10 speaker  11 named entities  12..N-1 one SRL column per predicate  N coreference

so a line has ``12 + number of predicates`` columns, constant within a sentence. Bracketed columns
(named entities, SRL) use ``(LABEL*`` to open, ``*)`` to close, ``*`` inside/outside, ``(LABEL*)``
for one token (named entities also write ``(GPE)``). The coreference column uses ``(12`` / ``12)`` /
``(12)`` joined by ``|``, ``-`` for none. Spans are :class:`tasks.common.spans.Span`; bracket
columns are written by :func:`tasks.common.spans.spans_to_brackets`.

Variants read (each reported in :attr:`Document.style`, see :class:`ConllStyle`):

* Placeholders: OntoNotes writes ``-`` for an empty cell and ``*`` outside every bracket; LitBank
  (Bamman et al. 2020) writes ``_`` everywhere. ``_`` and ``-`` in a bracketed column mean ``*``;
  ``_``, ``-`` and an empty field in the coreference column mean "no mention". Other cells are kept
  verbatim (a ``_`` POS tag stays ``_``).
* Separators: a line holding a tab is split at tabs (cells stripped), so an empty last field
  (LitBank writes one for a token outside every mention) is an empty coreference field; other
  lines are split at runs of whitespace. Only the coreference field may be empty.
* Files: a directory is searched for ``*_conll`` files, else for ``*.conll`` files (LitBank).

Policy (see :mod:`tasks.common.io`): any structural problem raises :class:`DataError` with the file
and 1-based line; nothing partial is returned for the offending document.

Facts worth knowing:

* The document id comes from the ``#begin document`` header; column 1 may disagree with it (the
  allennlp SRL fixtures do) and is ignored. Genre = first path component of the id (``bc``, ``nw``).
* Coreference brackets on one token are processed as the reference scorer v8.01 (``CorScorer.pm``,
  ``GetCoreference``) does: single-token mentions first, then openings, then closings, each closing
  popping the most recent open mention of its cluster. Clusters are ordered by first appearance and
  mentions by completion, which is the order the scorer uses when it drops repeated mentions.
* The word-index column is only checked to be a non-negative integer: the public fixtures skip
  indices inside a sentence.

Layers (the ``layers`` argument of :func:`read_documents`): ``"all"`` (the default) validates and
parses every column as described above. ``"coreference"`` validates only what coreference reads, as
e2e-coref's ``minimize.py`` (Lee et al. 2017: document, word, speaker and last column) and the
reference scorer do: the ``#begin``/``#end document`` structure, the column count (at least 12,
constant within a sentence, so that the word, speaker and coreference columns stay where they are),
words (column 4), speakers (column 10) and the coreference column. The word index, the named
entities and the predicate-argument columns are neither checked nor parsed
(:attr:`Sentence.named_entities` and :attr:`Sentence.srl_frames` are empty), so a corpus whose
middle columns carry other annotations (time stamps, say) reads as it does with ``*`` there.
``"predicates"`` validates only what semantic role labelling reads (allennlp's ``Ontonotes`` reader
likewise reads a named-entity cell without brackets as ``*``): the document structure, the column
count, the word index, the words and the predicate-argument columns (checked and parsed as with
``"all"``). The named entities and the coreference column are neither checked nor parsed
(:attr:`Sentence.named_entities` and :attr:`Document.clusters` are empty), so a file whose
named-entity or coreference column carries other annotations gives the same predicates and arguments
as with ``*`` and ``-`` there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from tasks.common.io import DataError, iter_lines
from tasks.common.spans import Span

__all__ = [
    "LAYERS",
    "ConllStyle",
    "Document",
    "Layers",
    "Mention",
    "Sentence",
    "Span",
    "SrlFrame",
    "conll_files",
    "parse_begin_document",
    "read_documents",
    "read_sentences",
]

Mention = tuple[int, int]
"""A coreference mention: document-level token span ``(start, end)``, both inclusive."""

Layers = Literal["all", "coreference", "predicates"]
"""Which columns a read validates and parses (see the module docstring)."""
LAYERS: tuple[str, ...] = get_args(Layers)

NUM_FIXED_COLUMNS = 11  # columns 1-11; then the predicate columns, then the coreference column

_BEGIN = re.compile(r"^#\s*begin document \((?P<doc>[^()]*)\);\s*part\s+(?P<part>\d+)\s*$")
_END = re.compile(r"^#\s*end document\b")
# A bracket tag: openings "(LABEL", an optional "*", closings "LABEL)" or ")".
_BRACKET = re.compile(r"^(?P<open>(?:\([^()*\s]+)*)\*?(?P<close>(?:[^()*\s]*\))*)$")
_COREF_SINGLE = re.compile(r"^\((\d+)\)$")
_COREF_OPEN = re.compile(r"^\((\d+)$")
_COREF_CLOSE = re.compile(r"^(\d+)\)$")
#: Cells that stand for "nothing here" in the annotation columns (5 onwards).
PLACEHOLDERS = frozenset({"-", "_", "*"})
_NO_BRACKET = frozenset({"-", "_"})  # read as "*" in a bracketed column
_NO_COREF = frozenset({"-", "_", ""})


@dataclass(frozen=True)
class ConllStyle:
    """What a reader saw of a file's writing conventions (see the module docstring).

    Attributes:
        separators: ``"tab"`` and/or ``"space"``: how the token lines were split.
        placeholders: the placeholder cells (``-``, ``_``, ``*``) seen in columns 5 onwards.
        empty_coreference: some token line has an empty coreference field (LitBank's "no mention").
    """

    separators: frozenset[str] = frozenset()
    placeholders: frozenset[str] = frozenset()
    empty_coreference: bool = False

    @classmethod
    def combine(cls, styles: Iterable[ConllStyle]) -> ConllStyle:
        """Everything seen in any of ``styles`` (e.g. the documents of a split)."""
        separators: set[str] = set()
        placeholders: set[str] = set()
        empty = False
        for style in styles:
            separators |= style.separators
            placeholders |= style.placeholders
            empty = empty or style.empty_coreference
        return cls(frozenset(separators), frozenset(placeholders), empty)

    def describe(self) -> str:
        """In words, e.g. ``"tab-separated, '_' placeholders, empty coreference field = no
        mention"`` or ``"space-separated, '-' and '*' placeholders"``."""
        parts = [f"{' and '.join(sorted(self.separators))}-separated"] if self.separators else []
        if self.placeholders:
            order = [p for p in ("-", "_", "*") if p in self.placeholders]
            quoted = " and ".join(f"'{p}'" for p in order)
            parts.append(f"{quoted} placeholders")
        else:
            parts.append("no placeholders")
        if self.empty_coreference:
            parts.append("empty coreference field = no mention")
        return ", ".join(parts)


@dataclass(frozen=True)
class SrlFrame:
    """One predicate column of a sentence.

    Attributes:
        predicate_index: token index where the column's ``V`` span starts, or ``None`` when the
            column has no ``V`` span.
        arguments: every labelled span of the column (``V`` included, ``C-``/``R-`` labels kept as
            written), sorted by start, outer spans first.
    """

    predicate_index: int | None
    arguments: tuple[Span, ...]


@dataclass(frozen=True)
class Sentence:
    """One sentence of a CoNLL-2012 document part.

    Attributes:
        document_id: id from the ``#begin document`` header.
        part: part number from the header.
        index: 0-based sentence index within the part.
        start: document-level index of the first token (coreference spans use these indices).
        line: 1-based line number of the first token line.
        words, pos_tags, parse_bits, predicate_lemmas, framesets, word_senses, speakers: columns
            4-10, verbatim (``-``, or LitBank's ``_``, where the file has none).
        named_entities: spans of column 11 (empty when read with ``layers="coreference"``).
        srl_frames: one frame per predicate column, in column order (empty when read with
            ``layers="coreference"``).
    """

    document_id: str
    part: int
    index: int
    start: int
    line: int
    words: tuple[str, ...]
    pos_tags: tuple[str, ...]
    parse_bits: tuple[str, ...]
    predicate_lemmas: tuple[str, ...]
    framesets: tuple[str, ...]
    word_senses: tuple[str, ...]
    speakers: tuple[str, ...]
    named_entities: tuple[Span, ...]
    srl_frames: tuple[SrlFrame, ...]

    def __len__(self) -> int:
        return len(self.words)


@dataclass(frozen=True)
class Document:
    """One ``#begin document … #end document`` part.

    Attributes:
        document_id: e.g. ``bc/cctv/00/cctv_0000``.
        part: part number.
        path: the file it came from.
        line: 1-based line of its ``#begin document`` header.
        sentences: the sentences, in order.
        clusters: coreference clusters as document-level mentions, in the scorer's order (see module
            docstring). A mention repeated in the file is kept repeated.
        cluster_ids: the file's cluster number for each cluster.
        style: the separators and placeholders the part is written with.
    """

    document_id: str
    part: int
    path: str
    line: int
    sentences: tuple[Sentence, ...]
    clusters: tuple[tuple[Mention, ...], ...]
    cluster_ids: tuple[int, ...]
    style: ConllStyle = field(default=ConllStyle())

    @property
    def genre(self) -> str:
        """First path component of the document id (bc, bn, mz, nw, pt, tc, wb)."""
        return self.document_id.split("/", 1)[0]

    @property
    def key(self) -> tuple[str, int]:
        """``(document_id, part)``: how the coreference scorer pairs key and response documents."""
        return (self.document_id, self.part)

    @property
    def num_tokens(self) -> int:
        """Number of tokens in the part."""
        return sum(len(sentence) for sentence in self.sentences)


def parse_begin_document(line: str) -> tuple[str, int] | None:
    """``(document_id, part)`` if ``line`` is a ``#begin document`` header, else ``None``."""
    match = _BEGIN.match(line.strip())
    if match is None:
        return None
    return match.group("doc"), int(match.group("part"))


def conll_files(path: str | Path) -> list[Path]:
    """The files to read: ``path`` itself, or every ``*_conll`` file below a directory (else
    every ``*.conll`` file, LitBank's names), sorted by relative path.

    Raises:
        DataError: the path does not exist, or a directory holds no ``*_conll`` or ``*.conll``
            file.
    """
    path = Path(path)
    if path.is_dir():
        for pattern in ("*_conll", "*.conll"):
            files = sorted(
                (p for p in path.rglob(pattern) if p.is_file()),
                key=lambda p: p.relative_to(path).as_posix(),
            )
            if files:
                return files
        raise DataError(path, None, "directory holds no *_conll file (nor any *.conll file)")
    if not path.exists():
        raise DataError(path, None, "no such file or directory")
    return [path]


def read_documents(path: str | Path, *, layers: Layers = "all") -> Iterator[Document]:
    """Stream the document parts of a CoNLL-2012 file, or of every ``*_conll`` file below a folder.

    Args:
        path: a file, or a directory searched recursively for names ending in ``_conll`` (else
            in ``.conll``), sorted by relative path, so the order is deterministic.
        layers: ``"all"`` validates and parses every column; ``"coreference"`` only the columns
            coreference reads, leaving the word index, named entities and predicate arguments
            unchecked and unparsed; ``"predicates"`` only the columns semantic role labelling
            reads, leaving the named entities and coreference unchecked and unparsed (see the
            module docstring).

    Yields:
        Documents in file order.

    Raises:
        DataError: malformed input, with the file and line (see the module docstring).
        ValueError: ``layers`` is not one of :data:`LAYERS`.
    """
    if layers not in LAYERS:
        raise ValueError(f"layers must be one of {LAYERS}, got {layers!r}")
    for file in conll_files(path):
        yield from _read_file(file, layers)


def read_sentences(path: str | Path, *, layers: Layers = "all") -> Iterator[Sentence]:
    """Stream every sentence of :func:`read_documents` (with ``layers``) in order."""
    for document in read_documents(path, layers=layers):
        yield from document.sentences


# --------------------------------------------------------------------------------------------------
# implementation


class _Row:
    __slots__ = ("line", "columns")

    def __init__(self, line: int, columns: list[str]) -> None:
        self.line = line
        self.columns = columns


class _DocumentBuilder:
    """Accumulates one document part; coreference brackets are resolved token by token."""

    def __init__(
        self, path: Path, line: int, document_id: str, part: int, layers: Layers = "all"
    ) -> None:
        self.path = path
        self.layers: Layers = layers
        self.line = line
        self.document_id = document_id
        self.part = part
        self.sentences: list[Sentence] = []
        self.rows: list[_Row] = []
        self.num_tokens = 0
        self.cluster_index: dict[int, int] = {}
        self.clusters: list[list[Mention]] = []
        self.open_mentions: dict[int, list[tuple[int, int]]] = {}  # cluster -> [(start, line)]
        self.separators: set[str] = set()
        self.placeholders: set[str] = set()
        self.empty_coreference = False

    def _cluster(self, number: int) -> list[Mention]:
        if number not in self.cluster_index:
            self.cluster_index[number] = len(self.clusters)
            self.clusters.append([])
        return self.clusters[self.cluster_index[number]]

    def _split(self, line: int, text: str) -> list[str]:
        """The cells of a token line: at tabs when it has one (only the last may be empty), else
        at runs of whitespace; the separator and the placeholders seen are recorded."""
        if "\t" not in text:
            self.separators.add("space")
            columns = text.split()
        else:
            self.separators.add("tab")
            columns = [cell.strip() for cell in text.strip(" \r\n").split("\t")]
            for number, cell in enumerate(columns[:-1], start=1):
                if not cell:
                    raise DataError(
                        self.path, line, f"column {number} is empty (tab-separated line)"
                    )
            if not columns[-1]:
                self.empty_coreference = True
        self.placeholders.update(cell for cell in columns[4:] if cell in PLACEHOLDERS)
        return columns

    def add_row(self, line: int, text: str) -> None:
        columns = self._split(line, text)
        if len(columns) < NUM_FIXED_COLUMNS + 1:
            raise DataError(
                self.path,
                line,
                f"expected at least {NUM_FIXED_COLUMNS + 1} columns, found {len(columns)}",
            )
        if self.rows and len(columns) != len(self.rows[0].columns):
            first = self.rows[0]
            raise DataError(
                self.path,
                line,
                f"expected {len(first.columns)} columns as on line {first.line} of this sentence, "
                f"found {len(columns)}",
            )
        if self.layers != "coreference" and not columns[2].isdigit():
            raise DataError(self.path, line, f"word index {columns[2]!r} is not an integer")
        if self.layers != "predicates":  # semantic role labelling reads no coreference
            self._add_coref(line, columns[-1])
        self.rows.append(_Row(line, columns))
        self.num_tokens += 1

    def _add_coref(self, line: int, field: str) -> None:
        token = self.num_tokens
        if field in _NO_COREF:
            return
        singles: list[int] = []
        opens: list[int] = []
        closes: list[int] = []
        for piece in field.split("|"):
            if match := _COREF_SINGLE.match(piece):
                singles.append(int(match.group(1)))
            elif match := _COREF_OPEN.match(piece):
                opens.append(int(match.group(1)))
            elif match := _COREF_CLOSE.match(piece):
                closes.append(int(match.group(1)))
            else:
                raise DataError(self.path, line, f"malformed coreference tag {field!r}")
        # Order as in CorScorer.pm GetCoreference: singles, then openings, then closings.
        for number in singles:
            self._cluster(number).append((token, token))
        for number in opens:
            self._cluster(number)
            self.open_mentions.setdefault(number, []).append((token, line))
        for number in closes:
            stack = self.open_mentions.get(number)
            if not stack:
                raise DataError(
                    self.path,
                    line,
                    f"coreference mention of cluster {number} closed but never opened",
                )
            start, _ = stack.pop()
            self._cluster(number).append((start, token))

    def end_sentence(self) -> None:
        if not self.rows:
            return
        rows = self.rows
        self.rows = []
        columns = list(zip(*(row.columns for row in rows), strict=True))
        lines = [row.line for row in rows]
        num_predicates = len(columns) - NUM_FIXED_COLUMNS - 1
        named_entities: tuple[Span, ...] = ()
        frames: list[SrlFrame] = []
        if self.layers == "all":  # coreference and predicates read none (module docstring)
            named_entities = _parse_brackets(self.path, lines, columns[10], "named-entity")
        for k in range(num_predicates if self.layers != "coreference" else 0):
            spans = _parse_brackets(self.path, lines, columns[NUM_FIXED_COLUMNS + k], "SRL")
            predicate = next((s.start for s in spans if s.label == "V"), None)
            frames.append(SrlFrame(predicate_index=predicate, arguments=spans))
        self.sentences.append(
            Sentence(
                document_id=self.document_id,
                part=self.part,
                index=len(self.sentences),
                start=self.num_tokens - len(rows),
                line=lines[0],
                words=columns[3],
                pos_tags=columns[4],
                parse_bits=columns[5],
                predicate_lemmas=columns[6],
                framesets=columns[7],
                word_senses=columns[8],
                speakers=columns[9],
                named_entities=named_entities,
                srl_frames=tuple(frames),
            )
        )

    def finish(self, line: int) -> Document:
        self.end_sentence()
        for number, stack in self.open_mentions.items():
            if stack:
                raise DataError(
                    self.path,
                    line,
                    f"coreference mention of cluster {number} opened on line {stack[-1][1]} "
                    "is never closed",
                )
        return Document(
            document_id=self.document_id,
            part=self.part,
            path=str(self.path),
            line=self.line,
            sentences=tuple(self.sentences),
            clusters=tuple(tuple(cluster) for cluster in self.clusters),
            cluster_ids=tuple(self.cluster_index),
            style=ConllStyle(
                frozenset(self.separators), frozenset(self.placeholders), self.empty_coreference
            ),
        )


def _parse_brackets(
    path: Path, lines: Sequence[int], tags: Sequence[str], what: str
) -> tuple[Span, ...]:
    """Parse one bracketed column of a sentence into spans (nesting allowed)."""
    stack: list[tuple[str, int, int]] = []  # (label, start, line)
    spans: list[Span] = []
    for position, (line, tag) in enumerate(zip(lines, tags, strict=True)):
        match = _BRACKET.match("*" if tag in _NO_BRACKET else tag)
        if match is None:
            raise DataError(path, line, f"malformed {what} tag {tag!r}")
        for label in match.group("open")[1:].split("(") if match.group("open") else ():
            stack.append((label, position, line))
        for label in match.group("close")[:-1].split(")") if match.group("close") else ():
            if not stack:
                raise DataError(path, line, f"{what} bracket closed but never opened in {tag!r}")
            open_label, start, _ = stack.pop()
            if label and label != open_label:
                raise DataError(
                    path, line, f"{what} span {open_label!r} closed as {label!r} in {tag!r}"
                )
            spans.append(Span(start, position, open_label))
    if stack:
        label, _, opened = stack[-1]
        raise DataError(
            path, lines[-1], f"{what} span {label!r} opened on line {opened} is never closed"
        )
    return tuple(sorted(spans, key=lambda s: (s.start, -s.end)))


def _read_file(path: Path, layers: Layers = "all") -> Iterator[Document]:
    builder: _DocumentBuilder | None = None
    last_line = 0
    for line_number, text in iter_lines(path):
        last_line = line_number
        stripped = text.strip()
        if builder is None:
            if not stripped:
                continue
            header = parse_begin_document(stripped)
            if header is not None:
                builder = _DocumentBuilder(path, line_number, *header, layers)
            elif _END.match(stripped):
                raise DataError(path, line_number, "#end document without #begin document")
            else:
                raise DataError(path, line_number, "text outside a document (no #begin document)")
            continue
        if not stripped:
            builder.end_sentence()
        elif stripped.startswith("#"):
            if _END.match(stripped):
                yield builder.finish(line_number)
                builder = None
            elif re.match(r"^#\s*begin\b", stripped):
                raise DataError(
                    path,
                    line_number,
                    f"#begin document inside document opened on line {builder.line} "
                    "(missing #end document)",
                )
            else:
                raise DataError(path, line_number, f"unexpected comment line {stripped[:40]!r}")
        else:
            builder.add_row(line_number, text)
    if builder is not None:
        raise DataError(
            path,
            last_line,
            f"missing #end document for the document opened on line {builder.line}",
        )
