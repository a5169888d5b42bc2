"""CoNLL-2003 English NER reader, yielding tags in IOB1, IOB2 or BIOUL.

Format (Tjong Kim Sang & De Meulder, 2003, ``eng.train`` / ``eng.testa`` / ``eng.testb``): one token
per line, ``WORD POS CHUNK NER`` separated by whitespace (spaces in the official files, tabs in some
copies); a blank line ends a sentence; a ``-DOCSTART- -X- -X- O`` line starts a document and is
**not** a sentence. NER tags are shipped in IOB1: ``I-TYPE`` inside an entity, ``B-TYPE`` only on
the first token of an entity that directly follows another entity of the same type.

The tag schemes and the lossless conversions between them live in :mod:`tasks.common.spans`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.common.io import DataError, ReadStats, attribute_columns, iter_lines, require_datasets
from tasks.common.spans import SCHEMES, Scheme, convert, split_tag, tags_to_spans

if TYPE_CHECKING:
    import datasets

    from tasks.ner.config import NerConfig

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


# ------------------------------------------------------------------ any CoNLL-column tagging file
#: CoNLL-2003 English file names (train, dev = testa, test = testb).
CONLL2003_FILES = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}
#: Generic file names (e.g. CoNLL-2000 chunking ships train.txt and test.txt only).
GENERIC_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
_CHUNK_TAG = re.compile(r"^[BILU]-\S+$")


@dataclass(frozen=True)
class TaggedSentence:
    """One sentence of a column file: its words and the chosen column's tags.

    Attributes:
        tokens: the words (first column).
        tags: one tag per word, as in the file (readers may re-encode them).
        line: 1-based line of the first word in ``path`` (tokens are on consecutive lines); the
            1-based row number for Hugging Face rows.
        path: the file it came from (for error messages), or the Hugging Face dataset's name.
    """

    tokens: tuple[str, ...]
    tags: tuple[str, ...]
    line: int = 0
    path: str = ""


def read_columns(
    path: str | Path,
    tag_column: int = -1,
    *,
    max_tokens: int | None = None,
    skip_long: bool = False,
    stats: ReadStats | None = None,
) -> Iterator[TaggedSentence]:
    """Stream the sentences of a CoNLL-style column file (word first, tags in ``tag_column``).

    A blank line ends a sentence; ``-DOCSTART-`` lines end one and are not sentences.

    Args:
        path: the file.
        tag_column: 0-based column of the tags; negative counts from the end (-1 = last, the
            NER column of CoNLL-2003 and the chunk column of CoNLL-2000).
        max_tokens: the longest sentence accepted (``None``: no limit).
        skip_long: skip (and count under ``"longer than max_tokens"``) longer sentences
            instead of raising.
        stats: counts of sentences read and skipped.

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a line without the tag column, or (unless
            ``skip_long``) a sentence over ``max_tokens``, located at its first line.
    """
    stats = stats if stats is not None else ReadStats()
    words: list[str] = []
    tags: list[str] = []
    first = 0

    def flush() -> Iterator[TaggedSentence]:
        if not words:
            return
        if max_tokens is not None and len(words) > max_tokens:
            if not skip_long:
                raise DataError(
                    path,
                    first,
                    f"sentence of {len(words)} tokens is longer than max_sentence_tokens="
                    f"{max_tokens} (raise it with --set max_sentence_tokens=N)",
                )
            stats.skip("longer than max_tokens", exempt=True)  # configured filter
        else:
            stats.examples += 1
            yield TaggedSentence(tuple(words), tuple(tags), first, str(path))
        words.clear()
        tags.clear()

    for number, line in iter_lines(path):
        fields = line.split()
        if not fields or fields[0] == DOCSTART:
            yield from flush()
            continue
        if not -len(fields) <= tag_column < len(fields) or tag_column % len(fields) == 0:
            raise DataError(
                path,
                number,
                f"no tag column {tag_column} after the word (the line has {len(fields)} "
                "columns; choose one with --set tag_column=N)",
            )
        if not words:
            first = number
        words.append(fields[0])
        tags.append(fields[tag_column])
    yield from flush()


def detect_scheme(tag_sequences: Iterable[Sequence[str]]) -> Scheme | None:
    """The tag scheme of a column: ``None`` for plain tags (e.g. POS), else IOB1, IOB2 or BIOUL.

    A column is a chunk column when some tag looks like ``B-X``/``I-X``/``L-X``/``U-X``. Then:
    BIOUL if an ``L-``/``U-`` tag occurs; IOB1 if some chunk starts with ``I-`` (after ``O``,
    after another type, or first in the sentence; CoNLL-2003); else IOB2 (CoNLL-2000).
    """
    chunked = lenient = bioul = False
    for tags in tag_sequences:
        previous = ("O", "")
        for tag in tags:
            if _CHUNK_TAG.match(tag):
                chunked = True
                prefix, chunk_type = split_tag(tag)
                bioul = bioul or prefix in ("L", "U")
                if prefix == "I" and not (previous[0] in "BI" and previous[1] == chunk_type):
                    lenient = True
                previous = (prefix, chunk_type)
            else:
                previous = ("O", "")
    if not chunked:
        return None
    return "BIOUL" if bioul else "IOB1" if lenient else "IOB2"


def check_tags(sentences: Iterable[TaggedSentence], scheme: Scheme | None) -> None:
    """Raise at the first tag outside ``scheme`` (``None``: any tag is fine).

    Raises:
        DataError: file:line of the tag and what the scheme allows.
    """
    if scheme is None:
        return
    allowed = "BILU" if scheme == "BIOUL" else "BI"
    for sentence in sentences:
        for offset, tag in enumerate(sentence.tags):
            prefix, chunk_type = split_tag(tag)
            if tag != "O" and (prefix not in allowed or not chunk_type or "-" not in tag):
                raise DataError(
                    sentence.path,
                    sentence.line + offset,
                    f"tag {tag!r} is outside the {scheme} scheme of this data (O or "
                    f"{'/'.join(allowed)}-TYPE)",
                )


def data_files(folder: str | Path) -> dict[str, Path]:
    """The split files of a data folder: CoNLL-2003 names (``eng.train``, ``eng.testa`` as dev,
    ``eng.testb`` as test) or ``train.txt`` / ``dev.txt`` / ``test.txt``; absent splits are
    left out.

    Raises:
        FileNotFoundError: no training file, naming both conventions.
    """
    folder = Path(folder)
    for names in (CONLL2003_FILES, GENERIC_FILES):
        if (folder / names["train"]).is_file():
            return {s: folder / n for s, n in names.items() if (folder / n).is_file()}
    raise FileNotFoundError(
        f"{folder}: no training file; expected CoNLL-2003's eng.train, eng.testa (dev), "
        "eng.testb (test), or train.txt, dev.txt, test.txt (column files, word first)"
    )


def load_hf_tagging(name: str, feature: str = "ner_tags") -> dict[str, list[TaggedSentence]]:
    """A Hugging Face tagging dataset (``conll2003``, ``eriktks/conll2003``) as sentences.

    Args:
        name: the dataset name on the Hub.
        feature: the tag column (a sequence of class labels), e.g. ``ner_tags``, ``chunk_tags``.

    Raises:
        FileNotFoundError: the dataset cannot be loaded (e.g. offline), naming what ``--data``
            must hold instead.
    """
    datasets = require_datasets()
    try:
        loaded = datasets.load_dataset(name)
    except Exception as exc:  # offline, unknown name, gated: one actionable message
        raise FileNotFoundError(
            f"could not load the Hugging Face dataset {name!r} ({type(exc).__name__}: {exc}); "
            "offline, pass --data DIR with eng.train, eng.testa and eng.testb (CoNLL-2003) or "
            "train.txt, dev.txt, test.txt"
        ) from None
    split_names = {"train": "train", "dev": "validation", "test": "test"}
    out: dict[str, list[TaggedSentence]] = {}
    for split, hf_split in split_names.items():
        if hf_split not in loaded:
            continue
        table = loaded[hf_split]
        names = table.features[feature].feature.names
        out[split] = [
            TaggedSentence(tuple(row["tokens"]), tuple(names[i] for i in row[feature]), n, name)
            for n, row in enumerate(table, start=1)
        ]
    return out


#: Split → sentences.
Splits = dict[str, list[TaggedSentence]]


def _read_folder(config: NerConfig, folder: Path) -> tuple[Splits, dict[str, ReadStats]]:
    """The column files of ``folder`` (:func:`data_files`); over-long training sentences are
    skipped (counted), over-long dev/test ones raise."""
    stats: dict[str, ReadStats] = {}
    splits: Splits = {}
    for split, path in data_files(folder).items():
        stats[split] = ReadStats(source=str(path))
        splits[split] = list(
            read_columns(
                path,
                config.tag_column,
                max_tokens=config.max_sentence_tokens,
                skip_long=split == "train",
                stats=stats[split],
            )
        )
    return splits, stats


def _hold_out_dev(splits: Splits, stats: dict[str, ReadStats], n: int) -> None:
    """Make the last ``n`` training sentences the dev split (``dev_from_train``)."""
    if n >= len(splits["train"]):
        raise ValueError(f"dev_from_train={n} leaves no training sentence")
    splits["train"], splits["dev"] = splits["train"][:-n], splits["train"][-n:]
    if "train" in stats:
        stats["train"].examples -= n
        stats["dev"] = ReadStats(n, source=f"{stats['train'].source} (last {n} sentences)")


def load_splits(
    config: NerConfig, data_dir: str | None, demo: Callable[[], Path]
) -> tuple[Splits, dict[str, ReadStats]]:
    """Sentences per split with the file's tags, and the read statistics: ``--data hf:NAME``
    (a Hugging Face dataset), a folder of column files, or the DEMO set (``demo()``).

    Raises:
        FileNotFoundError: no dev split (and no ``dev_from_train``).
        ValueError: ``dev_from_train`` leaves no training sentence.
    """
    if data_dir is not None and data_dir.startswith("hf:"):
        splits = load_hf_tagging(data_dir[3:], config.hf_tag_feature)
        stats = {s: ReadStats(len(v), source=f"{data_dir}[{s}]") for s, v in splits.items()}
    else:
        splits, stats = _read_folder(config, Path(data_dir) if data_dir else demo())
    if config.dev_from_train > 0:
        _hold_out_dev(splits, stats, config.dev_from_train)
    if "dev" not in splits:
        raise FileNotFoundError(
            f"{data_dir}: no dev file (eng.testa or dev.txt); hold out the last N training "
            "sentences with --set dev_from_train=N"
        )
    return splits, stats


def encode_splits(raw: Splits, config: NerConfig) -> tuple[Splits, Scheme | None, Scheme | None]:
    """The data's tag scheme (detected from the training tags with ``tag_scheme=auto``), every
    tag checked against it, and the sentences in the CRF's label encoding.

    Returns:
        ``(splits, scheme, encoding)``: the sentences with tags in ``encoding`` (BIOUL for chunk
        data unless ``label_encoding=source``; ``None`` for plain tags), the data's scheme.

    Raises:
        DataError: a tag outside the scheme (file and line).
    """
    scheme: Scheme | None
    if config.tag_scheme == "auto":
        scheme = detect_scheme(ex.tags for ex in raw["train"])
    else:
        scheme = None if config.tag_scheme == "none" else config.tag_scheme
    for sentences in raw.values():
        check_tags(sentences, scheme)
    if scheme is None or config.label_encoding != "BIOUL" or scheme == "BIOUL":
        return raw, scheme, scheme
    splits = {
        s: [
            TaggedSentence(ex.tokens, tuple(convert(ex.tags, scheme, "BIOUL")), ex.line, ex.path)
            for ex in sentences
        ]
        for s, sentences in raw.items()
    }
    return splits, scheme, "BIOUL"


def tag_labels(encoding: Scheme | None, tags: Iterable[str]) -> list[str]:
    """Label strings in id order: ``O`` first, then every prefix of the encoding for each chunk
    type seen (so any valid sequence can be decoded); plain tags sorted."""
    if encoding is None:
        return sorted(set(tags))
    prefixes = "BILU" if encoding == "BIOUL" else "BI"
    types = sorted({t.split("-", 1)[1] for t in tags if t != "O"})
    return ["O", *(f"{p}-{t}" for t in types for p in prefixes)]
