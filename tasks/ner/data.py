"""CoNLL-2003 English NER reader, yielding tags in IOB1, IOB2 or BIOUL.

Format (Tjong Kim Sang & De Meulder, 2003, ``eng.train`` / ``eng.testa`` / ``eng.testb``): one token
per line, ``WORD POS CHUNK NER`` separated by whitespace (spaces in the official files, tabs in some
copies); a blank line ends a sentence; a ``-DOCSTART- -X- -X- O`` line starts a document and is
**not** a sentence. NER tags are shipped in IOB1: ``I-TYPE`` inside an entity, ``B-TYPE`` only on
the first token of an entity that directly follows another entity of the same type.

The tag schemes and the lossless conversions between them live in :mod:`tasks.common.spans`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.common.io import DataError, ReadStats, attribute_columns, iter_lines, require_datasets
from tasks.common.spans import SCHEMES, Scheme, convert, tags_to_spans

if TYPE_CHECKING:
    import datasets

DOCSTART = "-DOCSTART-"
NUM_COLUMNS = 4  # WORD POS CHUNK NER


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
        if scheme not in SCHEMES:
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
                tags_to_spans([fields[3]], "IOB1")
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
    columns = attribute_columns(reader, ("document_index", "sentence_index", *names))
    features = datasets.Features(
        {
            "document_index": datasets.Value("int32"),
            "sentence_index": datasets.Value("int32"),
            **{name: datasets.Sequence(datasets.Value("string")) for name in names},
        }
    )
    return datasets.Dataset.from_dict(columns, features=features)
