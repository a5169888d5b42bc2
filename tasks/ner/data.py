"""CoNLL-2003 English NER reader and lossless tag-scheme conversions (IOB1 ⇄ IOB2 ⇄ BIOUL).

Format (Tjong Kim Sang & De Meulder, 2003, ``eng.train`` / ``eng.testa`` / ``eng.testb``): one token
per line, ``WORD POS CHUNK NER`` separated by whitespace (spaces in the official files, tabs in some
copies); a blank line ends a sentence; a ``-DOCSTART- -X- -X- O`` line starts a document and is
**not** a sentence. NER tags are shipped in IOB1: ``I-TYPE`` inside an entity, ``B-TYPE`` only on
the first token of an entity that directly follows another entity of the same type.

Tag schemes (Ratinov & Roth, 2009, §4.2; Tjong Kim Sang & Veenstra, 1999):

* ``IOB1``: ``I-X`` everywhere in a chunk, ``B-X`` only where a chunk directly follows a chunk of
  the same type.
* ``IOB2``: ``B-X`` on the first token of every chunk, ``I-X`` on the rest.
* ``BIOUL``: ``U-X`` for single-token chunks, else ``B-X I-X* L-X``.

Decoding is lenient in the way conlleval is (an ``I-X`` after ``O`` or after another type opens a
chunk), encoding is canonical, so ``convert`` is lossless on valid sequences and keeps the chunks of
any sequence.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tasks.common.io import DataError, ReadStats, iter_lines, require_datasets

if TYPE_CHECKING:
    import datasets

Scheme = Literal["IOB1", "IOB2", "BIOUL"]
SCHEMES: tuple[Scheme, ...] = ("IOB1", "IOB2", "BIOUL")
DOCSTART = "-DOCSTART-"
NUM_COLUMNS = 4  # WORD POS CHUNK NER

_PREFIXES: dict[str, frozenset[str]] = {
    "IOB1": frozenset("BI"),
    "IOB2": frozenset("BI"),
    "BIOUL": frozenset("BILU"),
}


@dataclass(frozen=True)
class Chunk:
    """A typed chunk (entity) over tokens ``[start, end)``."""

    label: str
    start: int
    end: int


@dataclass(frozen=True)
class NerExample:
    """One CoNLL-2003 sentence.

    Attributes:
        document_index: 0-based index of the document (``-DOCSTART-`` block) in the file.
        sentence_index: 0-based index of the sentence within its document.
        tokens: the words.
        pos_tags: Penn Treebank POS tags.
        chunk_tags: syntactic chunk tags (IOB1, as shipped).
        ner_tags: entity tags in the reader's ``scheme``.
    """

    document_index: int
    sentence_index: int
    tokens: tuple[str, ...]
    pos_tags: tuple[str, ...]
    chunk_tags: tuple[str, ...]
    ner_tags: tuple[str, ...]


def _split(tag: str, scheme: Scheme) -> tuple[str, str]:
    """``"B-PER"`` → ``("B", "PER")``, ``"O"`` → ``("O", "")``; ValueError if not in ``scheme``."""
    if tag == "O":
        return "O", ""
    prefix, sep, label = tag.partition("-")
    if not sep or not label or prefix not in _PREFIXES[scheme]:
        raise ValueError(f"{tag!r} is not a {scheme} tag")
    return prefix, label


def tags_to_chunks(tags: Sequence[str], scheme: Scheme) -> list[Chunk]:
    """Decode a tag sequence into chunks, in order.

    IOB1 and IOB2 decode alike: ``B-X`` always opens a chunk, ``I-X`` continues an open ``X`` chunk
    and otherwise opens one (as conlleval does). BIOUL: ``B``/``U`` open, ``I``/``L`` continue an
    open chunk of the same type (else open one), ``L``/``U`` close.

    Raises:
        ValueError: a tag is not ``O`` or ``P-TYPE`` with a prefix allowed by ``scheme``.
    """
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown scheme {scheme!r}; valid: {', '.join(SCHEMES)}")
    continuing = ("I", "L") if scheme == "BIOUL" else ("I",)
    chunks: list[Chunk] = []
    start = 0
    current: str | None = None  # label of the open chunk
    for i, tag in enumerate(tags):
        prefix, label = _split(tag, scheme)
        continues = label == current and prefix in continuing
        if current is not None and not continues:
            chunks.append(Chunk(current, start, i))
            current = None
        if prefix != "O" and not continues:
            start, current = i, label
        if scheme == "BIOUL" and prefix in ("L", "U") and current is not None:
            chunks.append(Chunk(current, start, i + 1))
            current = None
    if current is not None:
        chunks.append(Chunk(current, start, len(tags)))
    return chunks


def chunks_to_tags(chunks: Sequence[Chunk], length: int, scheme: Scheme) -> list[str]:
    """Encode non-overlapping chunks as the canonical tag sequence of ``scheme``.

    Raises:
        ValueError: chunks overlap, are empty, or fall outside ``[0, length)``.
    """
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown scheme {scheme!r}; valid: {', '.join(SCHEMES)}")
    tags = ["O"] * length
    previous_end, previous_label = -1, None
    for chunk in sorted(chunks, key=lambda c: c.start):
        if not 0 <= chunk.start < chunk.end <= length or chunk.start < previous_end:
            raise ValueError(f"chunk {chunk} overlaps another or is outside [0, {length})")
        width = chunk.end - chunk.start
        if scheme == "IOB1":
            adjacent = chunk.start == previous_end and chunk.label == previous_label
            body = ["B" if adjacent else "I"] + ["I"] * (width - 1)
        elif scheme == "IOB2":
            body = ["B"] + ["I"] * (width - 1)
        else:
            body = ["U"] if width == 1 else ["B"] + ["I"] * (width - 2) + ["L"]
        tags[chunk.start : chunk.end] = [f"{prefix}-{chunk.label}" for prefix in body]
        previous_end, previous_label = chunk.end, chunk.label
    return tags


def convert(tags: Sequence[str], source: Scheme, target: Scheme) -> list[str]:
    """Re-encode ``tags`` from ``source`` to ``target`` keeping the chunks.

    >>> convert(["I-PER", "B-PER", "O", "I-LOC"], "IOB1", "BIOUL")
    ['U-PER', 'U-PER', 'O', 'U-LOC']
    """
    return chunks_to_tags(tags_to_chunks(tags, source), len(tags), target)


def is_valid(tags: Sequence[str], scheme: Scheme) -> bool:
    """Whether ``tags`` is a well-formed ``scheme`` sequence (its own canonical encoding)."""
    try:
        return convert(tags, scheme, scheme) == list(tags)
    except ValueError:
        return False


class Conll2003Reader:
    """Streams the sentences of a CoNLL-2003 file.

    Iterating yields :class:`NerExample` objects lazily; ``stats`` (and ``documents``) describe the
    last iteration and are complete once it is exhausted.

    Args:
        path: ``eng.train`` / ``eng.testa`` / ``eng.testb`` or a file in that format.
        scheme: the NER tag scheme of the yielded examples (the file is IOB1; IOB2 files read too).

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a token line without exactly 4 columns, or an NER
            tag that is neither ``O`` nor ``B-``/``I-TYPE``.
    """

    def __init__(self, path: str | Path, *, scheme: Scheme = "IOB1") -> None:
        if scheme not in _PREFIXES:
            raise ValueError(f"unknown scheme {scheme!r}; valid: {', '.join(SCHEMES)}")
        self.path = Path(path)
        self.scheme: Scheme = scheme
        self.stats = ReadStats()
        self.documents = 0

    def __iter__(self) -> Iterator[NerExample]:
        self.stats = ReadStats()
        self.documents = 0
        document = -1  # no -DOCSTART- seen yet: sentences before one form document 0
        sentence = 0
        rows: list[list[str]] = []

        def flush() -> NerExample:
            nonlocal sentence
            tokens, pos, chunk, ner = (tuple(column) for column in zip(*rows, strict=True))
            if self.scheme != "IOB1":
                ner = tuple(convert(ner, "IOB1", self.scheme))
            example = NerExample(max(document, 0), sentence, tokens, pos, chunk, ner)
            sentence += 1
            self.stats.examples += 1
            rows.clear()
            return example

        for number, line in iter_lines(self.path):
            fields = line.split()
            if fields and fields[0] == DOCSTART:
                if rows:
                    yield flush()
                document += 1
                self.documents += 1
                sentence = 0
                continue
            if not fields:
                if rows:
                    yield flush()
                continue
            if len(fields) != NUM_COLUMNS:
                raise DataError(
                    self.path, number, f"expected 4 columns (WORD POS CHUNK NER), got {len(fields)}"
                )
            try:
                _split(fields[3], "IOB1")
            except ValueError as exc:
                raise DataError(self.path, number, f"bad NER tag: {exc}") from None
            if document < 0:
                document = 0
                self.documents = 1
            rows.append(fields)
        if rows:
            yield flush()


def to_hf_dataset(path: str | Path, *, scheme: Scheme = "IOB1") -> datasets.Dataset:
    """Read a CoNLL-2003 file into a Hugging Face ``datasets.Dataset`` (one row per sentence)."""
    datasets = require_datasets()
    reader = Conll2003Reader(path, scheme=scheme)
    names = ("tokens", "pos_tags", "chunk_tags", "ner_tags")
    columns: dict[str, list[object]] = {
        name: [] for name in ("document_index", "sentence_index", *names)
    }
    for example in reader:
        for name, values in columns.items():
            value = getattr(example, name)
            values.append(list(value) if isinstance(value, tuple) else value)
    features = datasets.Features(
        {
            "document_index": datasets.Value("int32"),
            "sentence_index": datasets.Value("int32"),
            **{name: datasets.Sequence(datasets.Value("string")) for name in names},
        }
    )
    return datasets.Dataset.from_dict(columns, features=features)
