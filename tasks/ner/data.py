"""CoNLL-2003 English NER reader, yielding tags in IOB1, IOB2 or BIOUL.

Format (Tjong Kim Sang & De Meulder, 2003, ``eng.train`` / ``eng.testa`` / ``eng.testb``): one token
per line, ``WORD POS CHUNK NER`` separated by whitespace (spaces in the official files, tabs in some
copies; in a line holding a tab only ASCII whitespace separates, so a no-break space inside a word
stays in it: :func:`split_whitespace`); a blank line ends a sentence; a ``-DOCSTART- -X- -X- O``
line starts a document and is **not** a sentence. NER tags are shipped in IOB1: ``I-TYPE`` inside
an entity, ``B-TYPE`` only on the first token of an entity that directly follows another entity of
the same type.

Any CoNLL-style column file (word first, the tags in one column) reads through
:func:`read_columns`, and a data folder through :func:`load_splits` in one of the
:data:`ACCEPTED_LAYOUTS` (CoNLL-2003 ``eng.*``, CoNLL-2002 ``esp.*`` / ``ned.*``, ``train.txt`` /
``dev.txt`` / ``test.txt``, or ``train/`` / ``dev/`` / ``test/`` folders of ``*.tsv`` /
``*.conll`` / ``*.txt`` files such as LitBank entities', or CoNLL-U files of Universal
Dependencies, read by :func:`read_conllu`); what the reader detects (layout, columns,
``-DOCSTART-``, tag column, tag scheme) is reported in :attr:`ReadStats.variant`.

The tag schemes and the lossless conversions between them live in :mod:`tasks.common.spans`.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tasks.common.io import (
    DataError,
    ReadStats,
    attribute_columns,
    iter_lines,
    require_datasets,
    starts_with_bom,
)
from tasks.common.spans import SCHEMES, Scheme, convert, is_valid, split_tag, tags_to_spans

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
            fields = split_whitespace(line)
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
#: The layouts of single split files (the ``layout`` option's values), in detection order:
#: name → (the layout in words, split → file name).
FLAT_LAYOUTS: dict[str, tuple[str, dict[str, str]]] = {
    "eng": ("CoNLL-2003 English files", CONLL2003_FILES),
    "esp": (
        "CoNLL-2002 Spanish files",
        {"train": "esp.train", "dev": "esp.testa", "test": "esp.testb"},
    ),
    "ned": (
        "CoNLL-2002 Dutch files",
        {"train": "ned.train", "dev": "ned.testa", "test": "ned.testb"},
    ),
    "txt": ("flat files", GENERIC_FILES),
}
#: The ``folders`` layout: one sub-folder per split, holding column files with these suffixes.
FOLDER_SUFFIXES = (".tsv", ".conll", ".txt")
FOLDERS_DESCRIPTION = "folders train/, dev/, test/ of *.tsv, *.conll or *.txt column files"
#: The ``conllu`` layout's namings (Universal Dependencies' CoNLL-U files), in detection order:
#: the layout in words → split → the files' glob pattern in the data folder.
CONLLU_NAMINGS: dict[str, dict[str, str]] = {
    "CoNLL-U (UD naming)": {s: f"*-ud-{s}.conllu" for s in ("train", "dev", "test")},
    "CoNLL-U (plain naming)": {s: f"{s}.conllu" for s in ("train", "dev", "test")},
    "CoNLL-U (folders)": {s: f"{s}/*.conllu" for s in ("train", "dev", "test")},
}
CONLLU_DESCRIPTION = (
    "CoNLL-U files *-ud-train.conllu, *-ud-dev.conllu, *-ud-test.conllu (the UD release "
    "naming, one treebank per folder), train.conllu, dev.conllu, test.conllu, or folders "
    "train/, dev/, test/ of *.conllu files"
)
#: Every accepted layout, in words (error messages).
ACCEPTED_LAYOUTS = (
    "; ".join(
        f"{words} {names['train']}, {names['dev']} (dev), {names['test']} (test)"
        for words, names in FLAT_LAYOUTS.values()
    )
    + f"; {FOLDERS_DESCRIPTION}; {CONLLU_DESCRIPTION}; the test split is optional"
)
_CHUNK_TAG = re.compile(r"^[BILU]-\S+$")
_BIO_TAG = re.compile(r"^(O|[BI]-\S+)$")
_BIOES_TAG = re.compile(r"^[ES]-\S+$")
#: The skip reason of training sentences over ``max_sentence_tokens``.
LONG_SKIP = "longer than max_tokens"
#: LitBank entities' column files: the word, then at least this many BIO layers.
LITBANK_LAYERS = 4


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


@dataclass
class ColumnShape:
    """What reading one column file found (complete once its sentences are exhausted).

    Attributes:
        columns: fields on each token line (the first token line sets it; 0: none read yet).
        first_line: the 1-based line that set :attr:`columns`.
        tabbed: fields are tab-separated (``*.tsv``), else separated by any whitespace.
        bom: the file starts with a UTF-8 byte-order mark (stripped).
        docstarts: ``-DOCSTART-`` lines (document starts, not sentences).
    """

    columns: int = 0
    first_line: int = 0
    tabbed: bool = False
    bom: bool = False
    docstarts: int = 0


#: ASCII whitespace: what separates the columns of a line holding a tab (not ``*.tsv``).
_ASCII_WHITESPACE = re.compile(r"[ \t\n\r\f\v]+")


def split_whitespace(line: str) -> list[str]:
    """The whitespace-separated fields of one line (``[]`` for a blank one).

    A line holding a tab is split at ASCII whitespace only, so a non-ASCII space inside a word
    (``New\u00a0York``, as tab-separated exports write one) stays in it; a field of Unicode
    spaces only is no field, as before. Other lines are split at any whitespace (``str.split``).
    """
    if "\t" not in line:
        return line.split()
    return [field for part in _ASCII_WHITESPACE.split(line) if (field := part.strip())]


def _fields(line: str, tabbed: bool, path: str | Path, number: int) -> list[str]:
    """The fields of one line (``[]`` for a blank one); tab-separated fields keep inner spaces,
    and a trailing tab (LitBank's files end each line with one) ends the last field."""
    if not tabbed or not line.strip():
        return split_whitespace(line)
    fields = [part.strip() for part in line.rstrip("\t").split("\t")]
    if "" in fields:
        raise DataError(path, number, f"column {fields.index('')} is empty (tab-separated file)")
    return fields


def _check_line(
    fields: list[str], tag_column: int, shape: ColumnShape, path: str | Path, number: int
) -> None:
    """Raise unless the line has the tag column and as many columns as the file's first one."""
    if not -len(fields) <= tag_column < len(fields) or tag_column % len(fields) == 0:
        raise DataError(
            path,
            number,
            f"no tag column {tag_column} after the word (the line has {len(fields)} "
            "columns; choose one with --set tag_column=N)",
        )
    if not shape.columns:
        shape.columns, shape.first_line = len(fields), number
    elif len(fields) != shape.columns:
        raise DataError(
            path,
            number,
            f"{len(fields)} columns, but the first token line of the file (line "
            f"{shape.first_line}) has {shape.columns}: a column is missing or extra (columns "
            "are never shifted)",
        )


def read_columns(
    path: str | Path,
    tag_column: int = -1,
    *,
    max_tokens: int | None = None,
    skip_long: bool = False,
    stats: ReadStats | None = None,
    shape: ColumnShape | None = None,
) -> Iterator[TaggedSentence]:
    """Stream the sentences of a CoNLL-style column file (word first, tags in ``tag_column``).

    A blank line ends a sentence; ``-DOCSTART-`` lines end one and are not sentences. Fields are
    separated by tabs in ``*.tsv`` files and by whitespace otherwise (:func:`split_whitespace`:
    ASCII whitespace only in a line holding a tab); every token line of a
    file has the same number of columns. A byte-order mark at the start is stripped.

    Args:
        path: the file.
        tag_column: 0-based column of the tags; negative counts from the end (-1 = last, the
            NER column of CoNLL-2003 and the chunk column of CoNLL-2000).
        max_tokens: the longest sentence accepted (``None``: no limit).
        skip_long: skip (and count under ``"longer than max_tokens"``) longer sentences
            instead of raising.
        stats: counts of sentences read and skipped.
        shape: filled with what the file holds (columns, separator, BOM, ``-DOCSTART-``).

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a line without the tag column or with another
            number of columns than the file's first token line, an empty tab-separated field,
            or (unless ``skip_long``) a sentence over ``max_tokens``, located at its first line.
    """
    stats = stats if stats is not None else ReadStats()
    shape = shape if shape is not None else ColumnShape()
    shape.tabbed = Path(path).suffix == ".tsv"
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
            stats.skip(LONG_SKIP, exempt=True)  # configured filter
        else:
            stats.examples += 1
            yield TaggedSentence(tuple(words), tuple(tags), first, str(path))
        words.clear()
        tags.clear()

    shape.bom = starts_with_bom(path)  # iter_lines drops it
    for number, line in iter_lines(path):
        fields = _fields(line, shape.tabbed, path, number)
        if not fields or fields[0] == DOCSTART:
            shape.docstarts += bool(fields)
            yield from flush()
            continue
        _check_line(fields, tag_column, shape, path, number)
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


def check_types(
    splits: Mapping[str, Sequence[TaggedSentence]], scheme: Scheme | None, note: str = ""
) -> None:
    """Refuse a dev or test tag whose entity type training never has (plain tags: the tag).

    The tagger can never predict such a type, so it only lowers F1 and adds a per-type key
    scored 0.0; usually it is a typo (``I-PRE`` for ``I-PER``). Refused as SST-5 refuses a dev
    label outside the training label set.

    Args:
        splits: split → sentences with the file's tags; ``train`` sets the known types.
        scheme: the data's tag scheme (``None``: plain tags, each tag its own type).
        note: added to the error (e.g. that a length limit skipped training sentences).

    Raises:
        DataError: file:line of the first such tag, naming it, its type and the training types.
    """

    def kind(tag: str) -> str:
        return tag if scheme is None else split_tag(tag)[1]

    known = {kind(tag) for ex in splits["train"] for tag in ex.tags} - {""}
    for split, sentences in splits.items():
        if split == "train":
            continue
        for sentence in sentences:
            for offset, tag in enumerate(sentence.tags):
                if tag == "O" or (found := kind(tag)) in known:
                    continue
                what = "tag" if scheme is None else "entity type"
                raise DataError(
                    sentence.path,
                    sentence.line + offset,
                    f"{split} tag {tag!r}: {what} {found!r} never occurs in training "
                    f"(training {what}s: {', '.join(sorted(known)) or 'none'}{note}); fix "
                    "the tag or add training sentences of that type",
                )


def is_bioes(tag_sequences: Iterable[Sequence[str]]) -> bool:
    """Whether a tag column is BIOES (some ``E-``/``S-`` tag, and every sentence a valid
    sequence once ``E-``/``S-`` are read as BIOUL's ``L-``/``U-``)."""
    sequences = [list(tags) for tags in tag_sequences]
    if not any(_BIOES_TAG.match(tag) for tags in sequences for tag in tags):
        return False
    return all(is_valid(_bioes_to_bioul(tags), "BIOUL") for tags in sequences)


def _bioes_to_bioul(tags: Sequence[str]) -> tuple[str, ...]:
    """BIOES tags as BIOUL (``E-X`` → ``L-X``, ``S-X`` → ``U-X``; the same chunks)."""
    rename = {"E": "L", "S": "U"}
    return tuple(rename[t[0]] + t[1:] if _BIOES_TAG.match(t) else t for t in tags)


@dataclass(frozen=True)
class Layout:
    """The split files of a data folder.

    Attributes:
        name: the ``layout`` option's value (``eng``, ``esp``, ``ned``, ``txt``, ``folders`` or
            ``conllu``).
        description: the layout in words (for ``conllu``, a key of :data:`CONLLU_NAMINGS`).
        files: split → its files in reading order (one file per split, or a split folder's
            column files sorted by name); absent splits are left out.
    """

    name: str
    description: str
    files: dict[str, tuple[Path, ...]]


def _layout(folder: Path, name: str) -> Layout | None:
    """``folder`` read as layout ``name``, or ``None`` when its training split is not there.

    Raises:
        FileNotFoundError: a split folder of the ``folders`` layout holds no column file.
        DataError: several CoNLL-U namings or treebanks in one folder (:func:`_conllu_layout`).
    """
    if name == "conllu":
        return _conllu_layout(folder)
    if name in FLAT_LAYOUTS:
        description, names = FLAT_LAYOUTS[name]
        if not (folder / names["train"]).is_file():
            return None
        present: dict[str, tuple[Path, ...]] = {
            s: (folder / n,) for s, n in names.items() if (folder / n).is_file()
        }
        return Layout(name, description, present)
    if not (folder / "train").is_dir():
        return None
    files: dict[str, tuple[Path, ...]] = {}
    for split in ("train", "dev", "test"):
        sub = folder / split
        if sub.is_dir():
            files[split] = tuple(
                sorted(
                    p
                    for p in sub.iterdir()
                    if p.is_file() and p.suffix in FOLDER_SUFFIXES and not p.name.startswith(".")
                )
            )
            if not files[split] and any(sub.glob("*.conllu")):
                return None  # split folders of CoNLL-U files: the conllu layout
            if not files[split]:
                raise FileNotFoundError(
                    f"{sub}: no column file (*.tsv, *.conll or *.txt) in this split folder"
                )
    return Layout("folders", FOLDERS_DESCRIPTION, files)


def find_layout(folder: str | Path, choice: str = "auto") -> Layout:
    """The layout of a data folder: ``choice`` (a name of :data:`FLAT_LAYOUTS`, ``folders`` or
    ``conllu``), or with ``auto`` the one layout whose training split is there.

    Raises:
        FileNotFoundError: no such folder, or no training split of the layout(s) looked for
            (naming the accepted layouts).
        DataError: with ``auto``, the folder holds the training splits of several layouts.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such data folder (accepted: {ACCEPTED_LAYOUTS})")
    names = [*FLAT_LAYOUTS, "folders", "conllu"] if choice == "auto" else [choice]
    found = [layout for name in names if (layout := _layout(folder, name)) is not None]
    if not found:
        looked = "any layout" if choice == "auto" else f"layout={choice}"
        raise FileNotFoundError(
            f"{folder}: no training split ({looked}); accepted layouts: {ACCEPTED_LAYOUTS}"
        )
    if len(found) > 1:
        raise DataError(
            folder,
            None,
            f"holds the training split of several layouts ({', '.join(x.name for x in found)}); "
            f"choose one with --set layout={'|'.join(x.name for x in found)}",
        )
    return found[0]


def _peek_fields(path: Path) -> list[str]:
    """The fields of the first token line of a column file (``[]`` when it has none)."""
    for number, line in iter_lines(path):
        fields = _fields(line, path.suffix == ".tsv", path, number)
        if fields and fields[0] != DOCSTART:
            return fields
    return []


def is_litbank(layout: Layout) -> bool:
    """Whether a layout is LitBank entities' (``folders`` of ``*.tsv`` files whose token lines
    hold the word and at least :data:`LITBANK_LAYERS` BIO columns, outermost layer first)."""
    first = layout.files["train"][0]
    if layout.name != "folders" or first.suffix != ".tsv":
        return False
    fields = _peek_fields(first)
    return len(fields) > LITBANK_LAYERS and all(_BIO_TAG.match(f) for f in fields[1:])


# ------------------------------------------------------------------------ CoNLL-U (UD) files
#: The ten tab-separated fields of a CoNLL-U token line (universaldependencies.org/format.html).
CONLLU_FIELDS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
#: The tag choice (``conllu_tag``) → its 0-based field.
CONLLU_TAG_FIELDS = {"upos": 3, "xpos": 4}
_WORD_ID = re.compile(r"^[1-9][0-9]*$")
_MULTIWORD_ID = re.compile(r"^[1-9][0-9]*-[1-9][0-9]*$")
_EMPTY_NODE_ID = re.compile(r"^[0-9]+\.[1-9][0-9]*$")


@dataclass
class ConlluCounts:
    """What reading CoNLL-U files found besides the sentences (adds up over files).

    Attributes:
        multiword: multiword-token lines (ID ``3-4``) skipped; their words are read.
        empty_nodes: empty-node lines (ID ``5.1``, enhanced dependencies only) skipped.
        boms: files that start with a UTF-8 byte-order mark (stripped).
    """

    multiword: int = 0
    empty_nodes: int = 0
    boms: int = 0


def _conllu_layout(folder: Path) -> Layout | None:
    """``folder`` as CoNLL-U files of one naming of :data:`CONLLU_NAMINGS`, or ``None`` when no
    naming's training file is there.

    Raises:
        DataError: training files of several namings, or a UD-named split with several files
            (two treebanks in one folder).
    """
    found: dict[str, dict[str, tuple[Path, ...]]] = {}
    for description, patterns in CONLLU_NAMINGS.items():
        files = {
            split: tuple(
                sorted(p for p in folder.glob(pattern) if p.is_file() and p.name[0] != ".")
            )
            for split, pattern in patterns.items()
        }
        if files["train"]:
            found[description] = {split: paths for split, paths in files.items() if paths}
    if len(found) > 1:
        raise DataError(
            folder, None, f"holds CoNLL-U training files of several namings ({', '.join(found)})"
        )
    if not found:
        return None
    description, files = found.popitem()
    for split, paths in files.items():
        if len(paths) > 1 and "folders" not in description:
            names = ", ".join(p.name for p in paths)
            raise DataError(
                folder, None, f"several {split} files ({names}): keep one treebank per folder"
            )
    return Layout("conllu", description, files)


def read_conllu(
    path: str | Path,
    tag: Literal["upos", "xpos"] = "upos",
    *,
    stats: ReadStats | None = None,
    counts: ConlluCounts | None = None,
) -> Iterator[TaggedSentence]:
    """Stream the sentences of a CoNLL-U file: each word's FORM and its UPOS or XPOS tag.

    A blank line ends a sentence; comment lines (``#``), multiword-token lines (ID ``3-4``: the
    surface token of the words 3 and 4, which are read) and empty nodes (ID ``5.1``) are skipped,
    the last two counted in ``counts``. A byte-order mark at the start is stripped.

    Args:
        path: the file.
        tag: the tag field, ``upos`` (UPOS) or ``xpos`` (XPOS).
        stats: counts of sentences read.
        counts: multiword tokens and empty nodes skipped, byte-order marks.

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a token line without exactly 10 tab-separated
            fields or with an empty one, an ID that is no word index, range or empty node, word
            IDs out of sequence, or a ``_`` tag (no UPOS / XPOS given), at file:line.
    """
    stats = stats if stats is not None else ReadStats()
    counts = counts if counts is not None else ConlluCounts()
    column = CONLLU_TAG_FIELDS[tag]
    words: list[str] = []
    tags: list[str] = []
    first = 0
    counts.boms += starts_with_bom(path)  # iter_lines drops it
    for number, line in iter_lines(path):
        if not line.strip():
            if words:
                stats.examples += 1
                yield TaggedSentence(tuple(words), tuple(tags), first, str(path))
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        fields = _conllu_fields(line, path, number)
        if _MULTIWORD_ID.match(fields[0]) or _EMPTY_NODE_ID.match(fields[0]):
            if "-" in fields[0]:
                counts.multiword += 1
            else:
                counts.empty_nodes += 1
            continue
        _check_conllu_word(fields, len(words), column, path, number)
        if not words:
            first = number
        words.append(fields[1])
        tags.append(fields[column])
    if words:
        stats.examples += 1
        yield TaggedSentence(tuple(words), tuple(tags), first, str(path))


def _conllu_fields(line: str, path: str | Path, number: int) -> list[str]:
    """The ten fields of a CoNLL-U token line.

    Raises:
        DataError: another number of tab-separated fields, or an empty one.
    """
    fields = line.split("\t")
    if len(fields) != len(CONLLU_FIELDS):
        spaces = " (the fields look space-separated)" if len(line.split()) == 10 else ""
        raise DataError(
            path,
            number,
            f"expected 10 tab-separated CoNLL-U fields ({' '.join(CONLLU_FIELDS)}), got "
            f"{len(fields)}{spaces}",
        )
    if "" in fields:
        raise DataError(path, number, f"field {CONLLU_FIELDS[fields.index('')]} is empty")
    return fields


def _check_conllu_word(
    fields: list[str], previous: int, column: int, path: str | Path, number: int
) -> None:
    """Raise unless a word line has the next word ID of its sentence and a tag.

    Raises:
        DataError: an ID that is no word index, range or empty node; a word ID other than
            ``previous + 1``; a ``_`` tag.
    """
    if not _WORD_ID.match(fields[0]):
        raise DataError(
            path,
            number,
            f"ID {fields[0]!r} is no word index (1, 2, ...), multiword-token range (3-4) or "
            "empty node (5.1)",
        )
    if int(fields[0]) != previous + 1:
        raise DataError(
            path,
            number,
            f"word ID {fields[0]} where {previous + 1} was expected (a missing line, or no blank "
            "line between two sentences)",
        )
    if fields[column] == "_":
        name = CONLLU_FIELDS[column]
        other = "xpos" if column == CONLLU_TAG_FIELDS["upos"] else "upos"
        raise DataError(
            path,
            number,
            f"no {name} for the word {fields[1]!r} ('_'); this file has no {name} tags, or "
            f"--set conllu_tag={other} reads the {other.upper()} field",
        )


def _counted(n: int, noun: str) -> str:
    """``n`` and ``noun`` in words: ``"1 empty node"``, ``"1,204 empty nodes"``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _read_conllu_layout(layout: Layout, config: NerConfig) -> tuple[Splits, dict[str, ReadStats]]:
    """Every split of a ``conllu`` layout, each split's statistics naming its file (or split
    folder), the tag field and the lines skipped (:attr:`ReadStats.variant`).

    Raises:
        ValueError: ``tag_column`` is set (CoNLL-U tags are chosen with ``conllu_tag``).
    """
    if config.tag_column is not None:
        raise ValueError(
            f"tag_column={config.tag_column} does not apply to CoNLL-U data; choose the tag "
            "with --set conllu_tag=upos|xpos"
        )
    tag = config.conllu_tag
    field_number = CONLLU_TAG_FIELDS[tag] + 1
    splits: Splits = {}
    stats: dict[str, ReadStats] = {}
    for split, files in layout.files.items():
        split_stats = stats[split] = ReadStats()
        counts = ConlluCounts()
        splits[split] = [
            sentence
            for path in files
            for sentence in read_conllu(path, tag, stats=split_stats, counts=counts)
        ]
        if layout.description.endswith("(folders)"):
            split_stats.source = str(files[0].parent)
            where = f"{split}/ folder of {len(files)} *.conllu files"
        else:
            split_stats.source = str(files[0])
            where = files[0].name
        parts = [
            f"{layout.description}: {where}",
            f"{tag.upper()} tags (field {field_number}; --set conllu_tag=upos|xpos)",
            f"{_counted(counts.multiword, 'multiword token')} skipped",
            f"{_counted(counts.empty_nodes, 'empty node')} skipped",
        ]
        if counts.boms:
            parts.append(
                f"byte-order mark stripped ({counts.boms} file{'s' if counts.boms > 1 else ''})"
            )
        split_stats.variant = ", ".join(parts)
    return splits, stats


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


def _tag_column(config: NerConfig, litbank: bool) -> tuple[int, str]:
    """The tag column to read and how it was chosen, in words."""
    if config.tag_column is not None:
        return config.tag_column, f"tag column {config.tag_column} (--set tag_column)"
    if litbank:
        return 1, "tag column 1 (the outermost entity layer)"
    return -1, "tag column -1 (the last column)"


def _shape_words(shapes: Sequence[ColumnShape], litbank: bool) -> str:
    """What a split's files hold, e.g. ``"whitespace-separated, 3 columns, -DOCSTART- absent"``."""

    def unit(columns: int) -> str:
        return f"word + {columns - 1} BIO layers" if litbank else f"{columns} columns"

    parts = ["tab-separated" if shapes[0].tabbed else "whitespace-separated"]
    counts = collections.Counter(s.columns for s in shapes if s.columns)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if ordered:
        others = ", ".join(f"{unit(n)} in {k} files" for n, k in ordered[1:])
        parts.append(unit(ordered[0][0]) + (f" ({others})" if others else ""))
    boms = sum(s.bom for s in shapes)
    if boms:
        parts.append(f"byte-order mark stripped ({boms} file{'s' if boms > 1 else ''})")
    documents = sum(s.docstarts for s in shapes)
    parts.append(f"-DOCSTART- present ({documents:,})" if documents else "-DOCSTART- absent")
    return ", ".join(parts)


def _read_layout(layout: Layout, config: NerConfig) -> tuple[Splits, dict[str, ReadStats]]:
    """Every split of ``layout`` with no length limit, each split's statistics naming its
    file (or split folder) and what the reader found (:attr:`ReadStats.variant`).

    Raises:
        ValueError: ``conllu_tag=xpos`` for a column layout, or ``tag_column`` for CoNLL-U.
    """
    if layout.name == "conllu":
        return _read_conllu_layout(layout, config)
    if config.conllu_tag != "upos":
        raise ValueError(
            f"conllu_tag={config.conllu_tag} applies to CoNLL-U data only; this folder is "
            f"{layout.description} (choose their tag column with --set tag_column=N)"
        )
    litbank = is_litbank(layout)
    column, column_words = _tag_column(config, litbank)
    splits: Splits = {}
    stats: dict[str, ReadStats] = {}
    for split, files in layout.files.items():
        split_stats = stats[split] = ReadStats()
        shapes = [ColumnShape() for _ in files]
        splits[split] = [
            sentence
            for path, shape in zip(files, shapes, strict=True)
            for sentence in read_columns(path, column, stats=split_stats, shape=shape)
        ]
        if layout.name == "folders":
            suffixes = "/".join(sorted({f"*{p.suffix}" for p in files}))
            split_stats.source = str(files[0].parent)
            where = f"{split}/ folder of {len(files)} {suffixes} files"
        else:
            split_stats.source = str(files[0])
            where = f"{files[0].name} ({layout.description})"
        prefix = "LitBank entities layout: " if litbank else ""
        split_stats.variant = f"{prefix}{where}, {_shape_words(shapes, litbank)}, {column_words}"
    return splits, stats


def _hold_out_dev(splits: Splits, stats: dict[str, ReadStats], n: int) -> None:
    """Make the last ``n`` training sentences the dev split (``dev_from_train``)."""
    if n >= len(splits["train"]):
        raise ValueError(f"dev_from_train={n} leaves no training sentence")
    replaced = f", {stats['dev'].source} is not used" if "dev" in stats else ""
    splits["train"], splits["dev"] = splits["train"][:-n], splits["train"][-n:]
    if "train" in stats:
        train = stats["train"]
        train.examples -= n
        stats["dev"] = ReadStats(
            n,
            source=f"{train.source} (last {n} sentences)",
            variant=f"held out: the last {n:,} training sentences (--set dev_from_train={n}"
            f"{replaced}), {train.variant}",
        )


def _drop_long(splits: Splits, stats: ReadStats, max_tokens: int) -> None:
    """Skip (and count, exempt) the training sentences over ``max_tokens``; evaluation
    sentences are never refused for their length."""
    kept = []
    for sentence in splits["train"]:
        if len(sentence.tokens) > max_tokens:
            stats.skip(LONG_SKIP, exempt=True)  # configured filter
            stats.examples -= 1
        else:
            kept.append(sentence)
    splits["train"] = kept


def _dev_looked_for(layout: Layout) -> str:
    """The dev split a layout looks for, in words (error messages)."""
    if layout.name == "folders":
        return "a dev/ folder"
    if layout.name == "conllu":
        return f"{CONLLU_NAMINGS[layout.description]['dev']} ({layout.description})"
    return f"{FLAT_LAYOUTS[layout.name][1]['dev']} ({layout.description})"


def _no_dev(where: str, looked: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"{where}: no dev split (looked for {looked}); accepted layouts: {ACCEPTED_LAYOUTS}. "
        "Data without a dev split (e.g. CoNLL-2000's train.txt and test.txt) need --set "
        "dev_from_train=N: the last N training sentences become the dev split (e.g. 1000)"
    )


def layout_files(config: NerConfig, folder: str | Path) -> list[Path]:
    """The files :func:`load_splits` reads from the data folder ``folder``: every split file
    of its layout (:func:`find_layout` with ``config.layout``), found without reading any data.

    Raises:
        FileNotFoundError: no training split, or no dev split and no ``dev_from_train``
            (naming the folder, what was looked for and the accepted layouts).
        DataError: an ambiguous folder.
    """
    layout = find_layout(folder, config.layout)
    if "dev" not in layout.files and config.dev_from_train <= 0:
        raise _no_dev(str(folder), _dev_looked_for(layout))
    return [path for files in layout.files.values() for path in files]


def load_splits(
    config: NerConfig, data_dir: str | None, demo: Callable[[], Path]
) -> tuple[Splits, dict[str, ReadStats]]:
    """Sentences per split with the file's tags, and the read statistics: ``--data hf:NAME``
    (a Hugging Face dataset: the only way to the Hub), a folder in one of the
    :data:`ACCEPTED_LAYOUTS` (:func:`find_layout`), or the DEMO set (``demo()``).

    Training sentences over ``max_sentence_tokens`` are skipped (counted, exempt) from folders;
    dev and test sentences are never refused for their length. A missing test split is fine.

    Raises:
        FileNotFoundError: no training split, or no dev split (and no ``dev_from_train``),
            naming the folder, what was looked for and the accepted layouts.
        DataError: a malformed file (file and line), or an ambiguous folder.
        ValueError: ``dev_from_train`` leaves no training sentence.
    """
    if data_dir is not None and data_dir.startswith("hf:"):
        name = data_dir[3:]
        splits = load_hf_tagging(name, config.hf_tag_feature)
        variant = f"Hugging Face dataset {name}, tags from {config.hf_tag_feature}"
        stats = {
            s: ReadStats(len(v), source=f"{data_dir}[{s}]", variant=variant)
            for s, v in splits.items()
        }
        where, looked = data_dir, "its 'validation' split"
    else:
        folder = Path(data_dir) if data_dir else demo()
        layout = find_layout(folder, config.layout)
        splits, stats = _read_layout(layout, config)
        where = str(folder)
        looked = _dev_looked_for(layout)
    if config.dev_from_train > 0:
        _hold_out_dev(splits, stats, config.dev_from_train)
    if "dev" not in splits:
        raise _no_dev(where, looked)
    if data_dir is None or not data_dir.startswith("hf:"):
        _drop_long(splits, stats["train"], config.max_sentence_tokens)
    return splits, stats


def _scheme(raw: Splits, config: NerConfig) -> tuple[Scheme | None, str, Splits]:
    """The data's tag scheme (BIOES read as BIOUL), how it was found in words, and the
    sentences (BIOES tags renamed)."""
    train = [ex.tags for ex in raw["train"]]
    auto = config.tag_scheme == "auto"
    how = "detected from train" if auto else f"tag_scheme={config.tag_scheme}"
    if config.tag_scheme == "BIOES" or (auto and is_bioes(train)):
        renamed = {
            s: [replace(ex, tags=_bioes_to_bioul(ex.tags)) for ex in sentences]
            for s, sentences in raw.items()
        }
        return "BIOUL", f"BIOES ({how}; E-/S- read as L-/U-)", renamed
    scheme: Scheme | None
    if config.tag_scheme == "auto":
        scheme = detect_scheme(train)
    elif config.tag_scheme == "none":
        scheme = None
    else:
        scheme = config.tag_scheme
    words = f"{scheme} ({how})" if scheme else f"plain tags, scored per token ({how})"
    return scheme, words, raw


def encode_splits(
    raw: Splits, config: NerConfig, stats: dict[str, ReadStats] | None = None
) -> tuple[Splits, Scheme | None, Scheme | None]:
    """The data's tag scheme (detected from the training tags with ``tag_scheme=auto``), every
    tag checked against it, and the sentences in the CRF's label encoding.

    Args:
        raw: split → sentences with the file's tags.
        config: the configuration (``tag_scheme``, ``label_encoding``).
        stats: when given, the scheme (and how it was found) is added to each split's
            :attr:`ReadStats.variant`.

    Returns:
        ``(splits, scheme, encoding)``: the sentences with tags in ``encoding`` (BIOUL for chunk
        data unless ``label_encoding=source``; ``None`` for plain tags), the data's scheme
        (BIOES data: BIOUL, the same chunks).

    Raises:
        DataError: a tag outside the scheme, or a dev/test tag of a type training never has
            (:func:`check_types`), with file and line.
    """
    scheme, words, raw = _scheme(raw, config)
    for sentences in raw.values():
        check_tags(sentences, scheme)
    long = stats["train"].skipped.get(LONG_SKIP, 0) if stats and "train" in stats else 0
    were = (
        "sentence longer than max_sentence_tokens={} was"
        if long == 1
        else ("sentences longer than max_sentence_tokens={} were")
    )
    note = f"; {long:,} training {were.format(config.max_sentence_tokens)} skipped" if long else ""
    check_types(raw, scheme, note)
    for split_stats in (stats or {}).values():
        split_stats.variant = f"{split_stats.variant}, {words}" if split_stats.variant else words
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
