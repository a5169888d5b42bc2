"""Converters: verified source files → one real set's folder, laid out as the readers expect.

Each converter (:data:`~experiments.data.fetch.formats.Converter`) takes the set's source files
(path in its repository → verified local file) and an empty output folder, and writes the set's
files there (and nothing else); :data:`CONVERTERS` names them for the manifest. The rules are
those the sets were first built with (docs/real_data.md):

* ``litbank`` (LitBank coreference ``coref/conll/*.conll``, entities ``entities/tsv/*.tsv``): the
  documents sorted by file name; the 9th, 19th, … (index ``i % 10 == 8``) are ``dev/``, the 10th,
  20th, … (``i % 10 == 9``) are held back (not written), the others ``train/``; files copied
  unchanged.
* ``conll2000`` (nltk_data's ``conll2000.zip``): ``train.txt`` and ``test.txt`` copied unchanged.
* ``sentence-polarity`` (nltk_data's ``sentence_polarity.zip``): the non-blank lines of
  ``rt-polarity.neg`` / ``.pos`` with surrounding whitespace stripped; line ``i`` of each file
  goes to ``valid`` when ``i % 10 == 8``, ``test`` when ``i % 10 == 9``, else ``train``; rows
  ``{"text": …, "label": "neg"|"pos"}`` as JSON lines, ``neg[i]`` before ``pos[i]``.
* ``conll2003`` (CoNLL-2003 English ``eng.train`` / ``eng.testa`` / ``eng.testb``): each line
  checked (blank, or four space-separated columns ``WORD POS CHUNK NER`` with an IOB1 tag,
  ``-DOCSTART-`` lines included), the files copied unchanged under their own names (the NER
  reader's ``eng`` layout: ``testa`` is dev, ``testb`` test).
* ``sentiment-trees`` (the Stanford Sentiment Treebank's PTB trees ``train.txt`` / ``dev.txt`` /
  ``test.txt``): each line checked to be one bracketed tree with balanced brackets, the files
  copied unchanged (the SST reader parses them).
* ``propbank`` (PropBank roles over the WSJ sample): :mod:`experiments.data.fetch.propbank`.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath

from experiments.data.fetch.formats import (
    Converter,
    FormatError,
    decode_utf8,
    one_source,
    read_member,
)
from experiments.data.fetch.propbank import convert_propbank

__all__ = [
    "CONVERTERS",
    "check_conll2003",
    "check_litbank_conll",
    "check_litbank_tsv",
    "check_sentiment_trees",
    "convert_conll2000",
    "convert_conll2003",
    "convert_litbank",
    "convert_sentence_polarity",
    "convert_sentiment_trees",
    "litbank_split",
    "polarity_rows",
]

_BIO = re.compile(r"O|[BI]-[A-Za-z_]+")
_CONLL2003 = ("eng.train", "eng.testa", "eng.testb")
_TREE_FILES = ("train.txt", "dev.txt", "test.txt")
_LITBANK_COLUMNS = 13  # document, part, index, word, eight "_", coreference


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The 1-based number and text of each non-blank line of a UTF-8 file.

    Raises:
        FormatError: the file is not UTF-8 (naming it).
    """
    text = decode_utf8(path.read_bytes(), str(path))
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield number, line


def litbank_split(names: Sequence[str]) -> dict[str, str]:
    """Each document file name → ``"train"``, ``"dev"`` or ``"test"`` (held back), by its
    index in file-name order: ``i % 10 == 8`` dev, ``i % 10 == 9`` test, else train."""
    splits = {}
    for index, name in enumerate(sorted(names)):
        splits[name] = {8: "dev", 9: "test"}.get(index % 10, "train")
    return splits


def check_litbank_conll(path: Path) -> None:
    """LitBank's coreference layout: ``#begin document (NAME); part 0``, tab-separated token
    lines of 13 fields, blank lines between sentences, ``#end document``.

    Raises:
        FormatError: naming the file and line.
    """
    lines = decode_utf8(path.read_bytes(), str(path)).split("\n")
    if not lines[0].startswith("#begin document"):
        raise FormatError(f"{path}:1: expected '#begin document (NAME); part 0'")
    ended = False
    for number, line in enumerate(lines[1:], 2):
        if ended and line:
            raise FormatError(f"{path}:{number}: text after '#end document'")
        if line.startswith("#end document"):
            ended = True
        elif line and len(line.split("\t")) != _LITBANK_COLUMNS:
            fields = len(line.split("\t"))
            raise FormatError(f"{path}:{number}: {fields} tab-separated fields, expected 13")
    if not ended:
        raise FormatError(f"{path}: no '#end document' line")


def check_litbank_tsv(path: Path) -> None:
    """LitBank's entity layout: a word and its BIO tags (``O``, ``B-PER``, ``I-PER``, …; an
    empty last field) tab-separated, blank lines between sentences.

    Raises:
        FormatError: naming the file and line.
    """
    for number, line in _lines(path):
        fields = line.split("\t")
        tags = fields[1:-1] if fields[-1] == "" else fields[1:]
        if not tags or not all(_BIO.fullmatch(tag) for tag in tags):
            raise FormatError(f"{path}:{number}: expected a word and BIO tags, tab-separated")


def convert_litbank(files: Mapping[str, Path], out: Path) -> None:
    """LitBank coreference (``*.conll``) or entities (``*.tsv``): checked, split, copied.

    Raises:
        FormatError: two sources with one file name, mixed kinds, or a malformed file.
    """
    by_name: dict[str, Path] = {}
    for path, local in files.items():
        name = PurePosixPath(path).name
        if name in by_name:
            raise FormatError(f"{path}: a second document named {name}")
        by_name[name] = local
    suffixes = {PurePosixPath(name).suffix for name in by_name}
    if len(suffixes) != 1 or not suffixes <= {".conll", ".tsv"}:
        raise FormatError(f"LitBank sources must be all *.conll or all *.tsv ({sorted(suffixes)})")
    check = check_litbank_conll if suffixes == {".conll"} else check_litbank_tsv
    for name, split in litbank_split(list(by_name)).items():
        check(by_name[name])
        if split != "test":
            (out / split).mkdir(exist_ok=True)
            shutil.copyfile(by_name[name], out / split / name)


def convert_conll2000(files: Mapping[str, Path], out: Path) -> None:
    """CoNLL-2000 chunking: ``conll2000/{train,test}.txt`` of the zip, checked and copied.

    Raises:
        FormatError: a line that is neither blank nor ``WORD POS CHUNK``.
    """
    archive = one_source(files, "conll2000.zip")
    for split in ("train", "test"):
        member = f"conll2000/{split}.txt"
        data = read_member(archive, member)
        for number, line in enumerate(decode_utf8(data, f"{archive}:{member}").split("\n"), 1):
            if line and len(line.split(" ")) != 3:
                raise FormatError(f"{archive}:{member}:{number}: expected 'WORD POS CHUNK'")
        (out / f"{split}.txt").write_bytes(data)


def _by_name(files: Mapping[str, Path], names: Sequence[str]) -> dict[str, Path]:
    """Each of ``names`` → its source file (the last part of its path).

    Raises:
        FormatError: a name without a source, or with two.
    """
    found: dict[str, Path] = {}
    for path, local in files.items():
        name = PurePosixPath(path).name
        if name in names:
            if name in found:
                raise FormatError(f"{path}: a second source file named {name}")
            found[name] = local
    missing = [n for n in names if n not in found]
    if missing:
        raise FormatError(f"no source file {', '.join(missing)} among {sorted(files)}")
    return found


def check_conll2003(path: Path) -> None:
    """CoNLL-2003's layout: blank lines, or ``WORD POS CHUNK NER`` separated by single spaces
    with an IOB1 tag (``O``, ``I-TYPE``, ``B-TYPE``); ``-DOCSTART- -X- -X- O`` lines start
    documents (Tjong Kim Sang & De Meulder, 2003).

    Raises:
        FormatError: naming the file and line.
    """
    for number, line in _lines(path):
        fields = line.split(" ")
        if len(fields) != 4 or not all(fields) or not _BIO.fullmatch(fields[3]):
            raise FormatError(f"{path}:{number}: expected 'WORD POS CHUNK TAG' (IOB1 tag)")


def convert_conll2003(files: Mapping[str, Path], out: Path) -> None:
    """CoNLL-2003 English: ``eng.train``, ``eng.testa``, ``eng.testb``, checked and copied.

    Raises:
        FormatError: a file missing, or a malformed line (file and line named).
    """
    for name, local in _by_name(files, _CONLL2003).items():
        check_conll2003(local)
        shutil.copyfile(local, out / name)


def check_sentiment_trees(path: Path) -> None:
    """The SST's PTB layout: every non-blank line one tree, ``(`` first, brackets balanced
    and closed at the line's end (the labels and leaves are the reader's to check).

    Raises:
        FormatError: naming the file and line.
    """
    for number, line in _lines(path):
        depth = 0
        for column, char in enumerate(line, 1):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth < 0 or (depth == 0 and char == ")" and line[column:].strip()):
                raise FormatError(f"{path}:{number}:{column}: unbalanced, or text after the tree")
        if not line.startswith("(") or depth:
            raise FormatError(f"{path}:{number}: expected one bracketed tree on the line")


def convert_sentiment_trees(files: Mapping[str, Path], out: Path) -> None:
    """The SST's PTB trees: ``train.txt``, ``dev.txt``, ``test.txt``, checked and copied.

    Raises:
        FormatError: a file missing, or a line that is not one bracketed tree.
    """
    for name, local in _by_name(files, _TREE_FILES).items():
        check_sentiment_trees(local)
        shutil.copyfile(local, out / name)


def polarity_rows(neg: str, pos: str) -> dict[str, list[dict[str, str]]]:
    """The split of Pang & Lee's snippets: split name → rows, ``neg[i]`` then ``pos[i]``.

    Args:
        neg: the text of ``rt-polarity.neg``.
        pos: the text of ``rt-polarity.pos``.
    """
    texts = {
        label: [line.strip() for line in text.split("\n") if line.strip()]
        for label, text in (("neg", neg), ("pos", pos))
    }
    rows: dict[str, list[dict[str, str]]] = {"train": [], "valid": [], "test": []}
    for index in range(max(len(lines) for lines in texts.values())):
        split = {8: "valid", 9: "test"}.get(index % 10, "train")
        for label, lines in texts.items():
            if index < len(lines):
                rows[split].append({"text": lines[index], "label": label})
    return rows


def convert_sentence_polarity(files: Mapping[str, Path], out: Path) -> None:
    """Sentence polarity v1.0: ``{train,valid,test}.jsonl`` from the zip's two files.

    Raises:
        FormatError: a member missing or not UTF-8.
    """
    archive = one_source(files, "sentence_polarity.zip")
    texts = {}
    for label in ("neg", "pos"):
        member = f"sentence_polarity/rt-polarity.{label}"
        texts[label] = decode_utf8(read_member(archive, member), f"{archive}:{member}")
    for split, rows in polarity_rows(texts["neg"], texts["pos"]).items():
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (out / f"{split}.jsonl").write_bytes(lines.encode("utf-8"))


#: The converters a manifest may name.
CONVERTERS: dict[str, Converter] = {
    "litbank": convert_litbank,
    "conll2000": convert_conll2000,
    "sentence-polarity": convert_sentence_polarity,
    "propbank": convert_propbank,
    "conll2003": convert_conll2003,
    "sentiment-trees": convert_sentiment_trees,
}
