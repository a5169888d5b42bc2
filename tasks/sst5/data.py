"""Stanford Sentiment Treebank reader (Socher et al., 2013) with a small PTB-bracket parser.

Format (``train.txt`` / ``dev.txt`` / ``test.txt``, 8,544 / 1,101 / 2,210 sentences): one sentence
per line as a fully labelled tree, e.g. ``(3 (2 It) (4 (2 's) (3 fine)))``. Every node carries a
sentiment label 0–4 (very negative … very positive); the root label is the sentence label, the inner
nodes give phrase labels. Tokens are kept as written (PTB escapes such as ``-LRB-`` are not undone).

A leaf may hold several words, read as NLTK reads them (:func:`parse_tree`): one node, one phrase
spanning them all. The official ``train.txt`` has three such leaves, ``(2 8\\u00a01\\/2)`` (the
film "8 1/2") and twice ``(2 2\\u00a01\\/2)``, a no-break space (U+00A0) between the words.

Granularities: ``"5-class"`` keeps 0–4; ``"2-class"`` drops neutral (2) and maps 0, 1 → 0 and
3, 4 → 1 (the SST-2 convention). With ``subtrees=True`` every phrase becomes an example (training
on all phrases, as allennlp's ``use_subtrees``; Peters et al. 2018, appendix, trained on phrases of
≥ 4 tokens: ``min_tokens=4``). Evaluation uses roots only.
"""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from tasks.common.io import DataError, ReadStats, iter_lines, require_datasets

if TYPE_CHECKING:
    import datasets

    from tasks.sst5.config import Sst5Config

Granularity = Literal["5-class", "2-class"]
GRANULARITIES: tuple[Granularity, ...] = ("5-class", "2-class")
NUM_LABELS = 5
NEUTRAL = 2
SKIP_NEUTRAL = "neutral"
SKIP_SHORT = "short phrase"

_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass(frozen=True)
class Phrase:
    """A labelled node: tokens ``[start, end)`` of its sentence, fine-grained label 0–4."""

    start: int
    end: int
    label: int


@dataclass(frozen=True)
class SstTree:
    """A parsed tree: its tokens and every node in pre-order (``phrases[0]`` is the root)."""

    tokens: tuple[str, ...]
    phrases: tuple[Phrase, ...]

    @property
    def label(self) -> int:
        """The root (sentence) label, 0–4."""
        return self.phrases[0].label


@dataclass(frozen=True)
class SstExample:
    """A sentence (or, with ``subtrees=True``, a phrase) and its label.

    Attributes:
        tree_index: 0-based index of the tree (line) it comes from.
        tokens: the words of the sentence or phrase.
        label: its label under the reader's granularity (0–4, or 0/1 for ``"2-class"``).
        phrases: every node inside it, spans relative to ``tokens``, **fine-grained** labels 0–4;
            ``phrases[0]`` is the example itself.
    """

    tree_index: int
    tokens: tuple[str, ...]
    label: int
    phrases: tuple[Phrase, ...]


def to_binary(label: int) -> int | None:
    """Fine-grained 0–4 → binary: 0, 1 → 0; 3, 4 → 1; neutral 2 → ``None``."""
    if not 0 <= label < NUM_LABELS:
        raise ValueError(f"label {label} is outside 0-4")
    return None if label == NEUTRAL else int(label > NEUTRAL)


def parse_tree(text: str) -> SstTree:
    """Parse one fully labelled PTB-style tree (no recursion, so deep trees are fine).

    Grammar: ``tree := "(" LABEL (WORD+ | tree+) ")"``, ``LABEL`` an integer 0–4; a ``WORD`` is a
    run of characters other than brackets and whitespace, where whitespace is any character
    Python's ``\\s`` matches in a str pattern (Unicode whitespace, the no-break space U+00A0
    included).

    A leaf with several words is one node whose phrase spans all of them, as NLTK reads it:
    ``nltk.Tree.fromstring``, which allennlp's ``sst_tokens`` reader
    (``StanfordSentimentTreeBankDatasetReader``) applies to each line, matches leaves with the
    pattern ``[^\\s()]+`` on a str (recent NLTK releases also let a backslash-escaped bracket into
    a token; the SST files hold none), so ``(2 8\\u00a01\\/2)`` in the official ``train.txt`` is
    one node (label 2) with the two leaves ``8`` and ``1\\/2``; ``tree.leaves()`` gives both as
    tokens and, with ``use_subtrees``, that node is one instance of two tokens. Reading it the
    same way keeps the tokens, phrases and instance counts equal to allennlp's. Words are kept
    as written (never re-joined).

    Raises:
        ValueError: unbalanced brackets, a missing or bad label, an empty node, a node with both
            words and subtrees, or text outside the single tree; the message gives the 1-based
            column.
    """
    words: list[str] = []
    nodes: list[Phrase | None] = []
    stack: list[_Open] = []
    done = False
    pieces = list(_TOKEN.finditer(text))
    position = 0
    while position < len(pieces):
        match = pieces[position]
        piece, column = match.group(), match.start() + 1
        position += 1
        if piece == "(":
            if done:
                raise ValueError(f"column {column}: text after the end of the tree")
            if stack and stack[-1].has_word:
                raise ValueError(f"column {column}: a node has both a word and subtrees")
            if position == len(pieces) or pieces[position].group() in ("(", ")"):
                raise ValueError(f"column {column}: '(' is not followed by a label")
            label_text = pieces[position].group()
            position += 1
            if not label_text.isascii() or not label_text.isdigit():
                raise ValueError(f"column {column}: label {label_text!r} is not an integer 0-4")
            label = int(label_text)
            if label >= NUM_LABELS:
                raise ValueError(f"column {column}: label {label} is outside 0-4")
            if stack:
                stack[-1].children += 1
            stack.append(_Open(label, len(words), len(nodes), column))
            nodes.append(None)
        elif piece == ")":
            if not stack:
                raise ValueError(f"column {column}: unbalanced brackets (unexpected ')')")
            node = stack.pop()
            if not node.children and not node.has_word:
                raise ValueError(f"column {node.column}: empty node (no word, no subtree)")
            nodes[node.index] = Phrase(node.start, len(words), node.label)
            done = not stack
        else:
            if not stack:
                raise ValueError(f"column {column}: word {piece!r} outside brackets")
            if stack[-1].children:
                raise ValueError(f"column {column}: a node has both subtrees and a word")
            stack[-1].has_word = True
            words.append(sys.intern(piece))  # one string per distinct word, not per occurrence
    if stack:
        raise ValueError(f"unbalanced brackets ({len(stack)} unclosed '(')")
    if not done:
        raise ValueError("no tree on the line")
    return SstTree(tuple(words), tuple(node for node in nodes if node is not None))


class SstReader:
    """Streams the sentences (or phrases) of an SST tree file.

    Iterating yields :class:`SstExample` objects lazily; ``stats`` (with skips under ``"neutral"``
    and ``"short phrase"``) and ``trees`` describe the last iteration and are complete once it is
    exhausted. Blank lines are allowed only at the end of the file (a tree's position is its line).

    Args:
        path: an SST tree file.
        granularity: ``"5-class"`` or ``"2-class"`` (neutral examples dropped).
        subtrees: yield every phrase (node), not only the roots.
        min_tokens: with ``subtrees``, skip phrases shorter than this (paper: 4).

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a blank line before a tree, or a line that is not
            one well-formed tree with labels 0–4.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        granularity: Granularity = "5-class",
        subtrees: bool = False,
        min_tokens: int = 1,
    ) -> None:
        if granularity not in GRANULARITIES:
            raise ValueError(f"unknown granularity {granularity!r}; valid: {GRANULARITIES}")
        if min_tokens != 1 and not subtrees:
            raise ValueError("min_tokens applies to phrases: pass subtrees=True")
        self.path = Path(path)
        self.granularity: Granularity = granularity
        self.subtrees = subtrees
        self.min_tokens = min_tokens
        self.stats = ReadStats()
        self.trees = 0

    def __iter__(self) -> Iterator[SstExample]:
        self.stats = ReadStats()
        self.trees = 0
        for index, tree in enumerate(iter_trees(self.path)):
            self.trees += 1
            count = len(tree.phrases) if self.subtrees else 1
            for position in range(count):
                phrase = tree.phrases[position]
                if phrase.end - phrase.start < self.min_tokens:
                    self.stats.skip(SKIP_SHORT, exempt=True)  # configured filter
                    continue
                label = phrase.label
                if self.granularity == "2-class":
                    binary = to_binary(phrase.label)
                    if binary is None:
                        self.stats.skip(SKIP_NEUTRAL, exempt=True)  # 2-class filter
                        continue
                    label = binary
                self.stats.examples += 1
                yield SstExample(
                    index,
                    tree.tokens[phrase.start : phrase.end],
                    label,
                    _descendants(tree.phrases, position),
                )


def iter_trees(path: str | Path) -> Iterator[SstTree]:
    """Parse an SST file line by line, one :class:`SstTree` per line.

    Raises:
        DataError: as :class:`SstReader`.
    """
    blank: int | None = None  # first blank line since the last tree
    for number, line in iter_lines(path):
        if not line.strip():
            blank = number if blank is None else blank
            continue
        if blank is not None:
            raise DataError(path, blank, "blank line before a tree (expected one tree per line)")
        try:
            yield parse_tree(line)
        except ValueError as exc:
            raise DataError(path, number, f"bad tree: {exc}") from None


def to_hf_dataset(
    path: str | Path,
    *,
    granularity: Granularity = "5-class",
    subtrees: bool = False,
    min_tokens: int = 1,
) -> datasets.Dataset:
    """Read an SST file into a Hugging Face ``datasets.Dataset``.

    Columns: ``tree_index``, ``tokens``, ``label`` (``ClassLabel``), ``phrase_starts``,
    ``phrase_ends``, ``phrase_labels`` (fine-grained).
    """
    datasets = require_datasets()
    reader = SstReader(path, granularity=granularity, subtrees=subtrees, min_tokens=min_tokens)
    names = ("tree_index", "tokens", "label", "phrase_starts", "phrase_ends", "phrase_labels")
    columns: dict[str, list[object]] = {name: [] for name in names}
    for example in reader:
        columns["tree_index"].append(example.tree_index)
        columns["tokens"].append(list(example.tokens))
        columns["label"].append(example.label)
        columns["phrase_starts"].append([phrase.start for phrase in example.phrases])
        columns["phrase_ends"].append([phrase.end for phrase in example.phrases])
        columns["phrase_labels"].append([phrase.label for phrase in example.phrases])
    label_names = (
        ["very negative", "negative", "neutral", "positive", "very positive"]
        if granularity == "5-class"
        else ["negative", "positive"]
    )
    integers = datasets.Sequence(datasets.Value("int32"))
    features = datasets.Features(
        {
            "tree_index": datasets.Value("int32"),
            "tokens": datasets.Sequence(datasets.Value("string")),
            "label": datasets.ClassLabel(names=label_names),
            "phrase_starts": integers,
            "phrase_ends": integers,
            "phrase_labels": integers,
        }
    )
    return datasets.Dataset.from_dict(columns, features=features)


@dataclass
class _Open:
    """A node whose ')' has not been read yet."""

    label: int
    start: int  # index of its first word
    index: int  # its position in the pre-order node list
    column: int
    children: int = 0
    has_word: bool = False


def _descendants(phrases: tuple[Phrase, ...], position: int) -> tuple[Phrase, ...]:
    """The node at ``position`` and its descendants (a contiguous pre-order block), re-based."""
    root = phrases[position]
    block = [root]
    for phrase in phrases[position + 1 :]:
        if phrase.start < root.start or phrase.end > root.end:
            break
        block.append(phrase)
    return tuple(Phrase(p.start - root.start, p.end - root.start, p.label) for p in block)


# ------------------------------------------------------------------ data for the BCN recipe
Layout = Literal["trees", "jsonl", "hub"]
TREE_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
JSONL_FILES = {
    "train": ("train.jsonl",),
    "dev": ("dev.jsonl", "valid.jsonl"),
    "test": ("test.jsonl",),
}
HF_DATASET = "SetFit/sst5"
HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
TREE_LABELS = tuple(str(label) for label in range(NUM_LABELS))

#: A JSON label value: a string or an integer (booleans, floats and null are refused).
RawLabel = str | int


class SstNotAvailable(FileNotFoundError):
    """A ``--data`` folder holds neither layout, or (``--data hf:NAME``) the Hugging Face Hub
    cannot be reached."""


def missing_files_error(folder: str | Path) -> SstNotAvailable:
    """The one-line error for a data folder with neither layout, naming the files it lacks."""
    root = Path(folder)
    where = str(folder) if root.is_dir() else f"{folder} (no such folder)"
    trees = [TREE_FILES[s] for s in ("train", "dev") if not (root / TREE_FILES[s]).is_file()]
    jsonl = [
        " or ".join(JSONL_FILES[s])
        for s in ("train", "dev")
        if not any((root / name).is_file() for name in JSONL_FILES[s])
    ]
    return SstNotAvailable(
        f"{where}: no {' and no '.join(trees)} (SST trees: train.txt, dev.txt, optional "
        f"test.txt) and no {' and no '.join(jsonl)} (JSON lines: train.jsonl, dev.jsonl or "
        'valid.jsonl, optional test.jsonl, one {"text", "label"} per line). A data folder is '
        f"never completed from the Hugging Face Hub: pass --data hf:{HF_DATASET} to read it "
        "from there"
    )


class TokenSpan(Sequence[str]):
    """The words ``text[start:end]`` of a sentence without a copy of them: a phrase's tokens.

    It reads as the tuple of those words does: length, indexing, iteration, equality and hash
    with tuples; slicing returns a tuple.
    """

    __slots__ = ("_end", "_start", "_text")

    def __init__(self, text: tuple[str, ...], start: int, end: int) -> None:
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"span [{start}, {end}) outside {len(text)} words")
        self._text, self._start, self._end = text, start, end

    def __len__(self) -> int:
        return self._end - self._start

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._text[self._start : self._end][index]

    def __iter__(self) -> Iterator[str]:
        return itertools.islice(self._text, self._start, self._end)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TokenSpan | tuple):
            return tuple(self) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[type[TokenSpan], tuple[tuple[str, ...], int, int]]:
        return TokenSpan, (self._text, self._start, self._end)


@dataclass(frozen=True, slots=True)
class TextExample:
    """One text the classifier sees.

    A phrase's ``tokens`` are a :class:`TokenSpan` of its sentence's words, not a copy of them:
    the phrases of a training file cost a few machine words each (a 200,000-line tree file
    expands to 1.4 M phrases of four tokens or more).

    Attributes:
        line: 1-based line of its file (a phrase has the line of its sentence); the row number
            for Hub data.
        tokens: its words (a tuple, or a phrase's span of its sentence's tuple).
        label: index into the data's label names (:attr:`SstData.labels`).
        root: a whole sentence (what is scored), not a phrase.
    """

    line: int
    tokens: Sequence[str]
    label: int
    root: bool = True


@dataclass
class SstData:
    """The splits of one dataset and how they were read.

    Attributes:
        splits: ``train``, ``dev`` and, when present, ``test``; dev and test hold sentences only.
        labels: label names, in index order (``"0"`` … ``"4"`` for SST trees; for JSON lines the
            distinct labels of the training file, integers in numeric order, else as strings).
        layout: ``"trees"`` (SST PTB trees), ``"jsonl"`` (``{"text", "label"}`` lines) or
            ``"hub"`` (``SetFit/sst5`` from the Hugging Face Hub, sentences only).
        files: split → the file read (or ``hf:SetFit/sst5[split]``).
        stats: split → examples produced and skipped (``"short phrase"``) while reading.
    """

    splits: dict[str, list[TextExample]]
    labels: tuple[str, ...]
    layout: Layout
    files: dict[str, str]
    stats: dict[str, ReadStats]


def _too_long(path: str | Path, line: int, n: int, max_tokens: int) -> DataError:
    return DataError(
        path,
        line,
        f"text of {n} tokens is longer than the model's limit max_tokens={max_tokens} "
        "(raise it with --set max_tokens=N)",
    )


def read_tree_texts(
    path: str | Path,
    *,
    phrases: bool,
    min_tokens: int,
    max_tokens: int,
    limit: int | None = None,
) -> tuple[list[TextExample], ReadStats]:
    """The sentences of an SST tree file, and with ``phrases`` their phrases too.

    Every sentence (root) is kept; with ``phrases`` each inner node with at least ``min_tokens``
    tokens is an example too (shorter ones are skipped and counted as ``"short phrase"``),
    labels 0–4 as in the file.

    Args:
        path: an SST tree file.
        phrases: inner nodes are examples too.
        min_tokens: the shortest phrase kept.
        max_tokens: the longest sentence accepted.
        limit: stop once this many examples are read (the first ``limit`` of a full read):
            the lines after the tree that completes them are never read, nor checked.
            ``None``: the whole file.

    Raises:
        DataError: a malformed tree (see :class:`SstReader`), or a sentence longer than
            ``max_tokens``, with the file and line (in the part read).
    """
    stats = ReadStats()
    examples: list[TextExample] = []
    for index, tree in enumerate(iter_trees(path)):
        line = index + 1  # blank lines may only follow the last tree
        if len(tree.tokens) > max_tokens:
            raise _too_long(path, line, len(tree.tokens), max_tokens)
        for position, phrase in enumerate(tree.phrases if phrases else tree.phrases[:1]):
            if position and phrase.end - phrase.start < min_tokens:
                stats.skip(SKIP_SHORT, exempt=True)  # configured filter
                continue
            # a phrase shares its sentence's words; the sentence is its own tuple
            tokens = TokenSpan(tree.tokens, phrase.start, phrase.end) if position else tree.tokens
            examples.append(TextExample(line, tokens, phrase.label, root=position == 0))
            if len(examples) == limit:
                break
        if len(examples) == limit:  # before the next line is parsed
            break
    stats.examples = len(examples)
    return examples, stats


def read_jsonl_texts(
    path: str | Path, *, max_tokens: int
) -> list[tuple[int, tuple[str, ...], RawLabel]]:
    """``(line, tokens, label)`` of a JSON-lines file with one ``{"text", "label"}`` object per
    line (other keys are ignored, blank lines skipped). Text is split on whitespace: give it
    tokenised.

    Raises:
        DataError: invalid UTF-8 or JSON, a line that is not an object, a missing field, a text
            that is not a string or is empty, a label that is not a string or an integer, or a
            text longer than ``max_tokens`` — with the file and line.
    """
    rows: list[tuple[int, tuple[str, ...], RawLabel]] = []
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, number, f"invalid JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise DataError(path, number, 'expected an object {"text": ..., "label": ...}')
        for key in ("text", "label"):
            if key not in item:
                raise DataError(path, number, f'missing "{key}"')
        text, label = item["text"], item["label"]
        if not isinstance(text, str):
            raise DataError(path, number, f'"text" must be a string, got {type(text).__name__}')
        tokens = tuple(text.split())
        if not tokens:
            raise DataError(path, number, "empty text")
        if len(tokens) > max_tokens:
            raise _too_long(path, number, len(tokens), max_tokens)
        if isinstance(label, bool) or not isinstance(label, str | int):
            raise DataError(path, number, f'"label" must be a string or an integer, got {label!r}')
        if isinstance(label, str) and (not label or label != label.strip() or "\n" in label):
            raise DataError(path, number, f"label {label!r} is empty or has surrounding spaces")
        rows.append((number, tokens, label))
    if not rows:
        raise DataError(path, None, "no examples (only blank lines)")
    return rows


def label_names(path: str | Path, labels: Iterator[RawLabel] | list[RawLabel]) -> tuple[str, ...]:
    """The label set of a training file: integers in numeric order, otherwise sorted strings.

    Raises:
        DataError: two different labels that read the same (``1`` and ``"1"``).
    """
    distinct = set(labels)
    by_name: dict[str, RawLabel] = {}
    for value in distinct:
        if str(value) in by_name:
            raise DataError(path, None, f"labels {value!r} and {by_name[str(value)]!r} clash")
        by_name[str(value)] = value
    if all(isinstance(v, int) for v in distinct):
        return tuple(str(v) for v in sorted(distinct, key=int))
    return tuple(sorted(by_name))


def _index_rows(
    path: str | Path, rows: list[tuple[int, tuple[str, ...], RawLabel]], labels: tuple[str, ...]
) -> list[TextExample]:
    ids = {name: i for i, name in enumerate(labels)}
    examples = []
    for line, tokens, label in rows:
        if str(label) not in ids:
            raise DataError(
                path, line, f"label {label!r} is not in the training label set {list(labels)}"
            )
        examples.append(TextExample(line, tokens, ids[str(label)]))
    return examples


def find_files(data_dir: str | Path) -> tuple[Layout, dict[str, Path]] | None:
    """The layout and split files of a data folder, or ``None`` when it has neither layout.

    Trees: ``train.txt`` + ``dev.txt`` (+ ``test.txt``). JSON lines: ``train.jsonl`` +
    ``dev.jsonl`` or ``valid.jsonl`` (+ ``test.jsonl``).
    """
    folder = Path(data_dir)
    trees = {s: folder / name for s, name in TREE_FILES.items() if (folder / name).is_file()}
    if "train" in trees and "dev" in trees:
        return "trees", trees
    found: dict[str, Path] = {}
    for split, names in JSONL_FILES.items():
        for name in names:
            if (folder / name).is_file():
                found[split] = folder / name
                break
    if "train" in found and "dev" in found:
        return "jsonl", found
    return None


def load_data(
    data_dir: str | Path | None = None,
    *,
    files: dict[str, str | Path] | None = None,
    phrases: bool = True,
    min_tokens: int = 4,
    max_tokens: int = 512,
    limit: int | None = None,
) -> SstData:
    """Read the train / dev / test splits for the classifier.

    Sources, in order: explicit ``files`` (split → path; ``.jsonl`` = JSON lines, anything else
    SST trees; ``train`` and ``dev`` required); ``data_dir="hf:NAME"``: the Hugging Face dataset
    NAME (``SetFit/sst5``: sentences only, labels 0–4; also read when ``data_dir`` is None); the
    folder ``data_dir`` (:func:`find_files`; never completed from the Hub).

    Training examples are phrases as :func:`read_tree_texts` (tree files with ``phrases``),
    otherwise sentences; dev and test are always sentences (roots).

    With ``limit``, each SST tree file is read only as far as its first ``limit`` examples
    (:func:`read_tree_texts`). JSON lines and the Hub are read whole: their label set is the
    whole training file's, which the first examples need not show.

    Raises:
        DataError: a malformed file, an empty text, a text over ``max_tokens``, or a dev/test
            label outside the training label set (with file and line).
        ValueError: explicit files mixing the two formats, or without ``train`` / ``dev``, or
            with ``hf:NAME``.
        SstNotAvailable: a folder with neither layout (naming the files it lacks), or the Hub
            cannot be reached.
    """
    hub = str(data_dir)[3:] if data_dir is not None and str(data_dir).startswith("hf:") else None
    if files and hub is not None:
        raise ValueError(
            f"--data {data_dir} reads every split from the Hugging Face Hub; it cannot be "
            "combined with train_file, dev_file or test_file"
        )
    if files:
        missing = [s for s in ("train", "dev") if s not in files]
        if missing:
            raise ValueError(f"explicit files need train and dev; missing {missing}")
        paths = {s: Path(p) for s, p in files.items()}
        kinds = {p.suffix == ".jsonl" for p in paths.values()}
        if len(kinds) > 1:
            raise ValueError("explicit files mix JSON lines (.jsonl) and SST tree files")
        layout: Layout = "jsonl" if kinds.pop() else "trees"
    elif data_dir is None or hub is not None:
        return _load_hub(hub or HF_DATASET, max_tokens)
    elif (found := find_files(data_dir)) is not None:
        layout, paths = found
    else:
        raise missing_files_error(data_dir)
    names = {s: str(p) for s, p in paths.items()}
    if layout == "trees":
        splits: dict[str, list[TextExample]] = {}
        stats: dict[str, ReadStats] = {}
        for split, path in paths.items():
            splits[split], stats[split] = read_tree_texts(
                path,
                phrases=phrases and split == "train",
                min_tokens=min_tokens,
                max_tokens=max_tokens,
                limit=limit,
            )
        return SstData(splits, TREE_LABELS, "trees", names, stats)
    rows = {s: read_jsonl_texts(p, max_tokens=max_tokens) for s, p in paths.items()}
    labels = label_names(paths["train"], [label for _, _, label in rows["train"]])
    splits = {s: _index_rows(paths[s], r, labels) for s, r in rows.items()}
    stats = {s: ReadStats(examples=len(v)) for s, v in splits.items()}
    return SstData(splits, labels, "jsonl", names, stats)


def _load_hub(name: str, max_tokens: int) -> SstData:
    """The Hugging Face dataset ``name`` (``SetFit/sst5``: columns ``text``, ``label`` 0–4)
    through ``datasets``."""
    ds = require_datasets()
    splits: dict[str, list[TextExample]] = {}
    names: dict[str, str] = {}
    for split, hf_split in HF_SPLITS.items():
        where = f"hf:{name}[{hf_split}]"
        try:
            table = ds.load_dataset(name, split=hf_split)
        except (OSError, ConnectionError, TimeoutError, ValueError) as exc:
            raise SstNotAvailable(
                f"SST-5 is not available: the Hugging Face Hub could not be "
                f"reached for {name!r} ({type(exc).__name__}: {exc}). Supply --data DIR "
                "with the official tree files train.txt, dev.txt, test.txt (trainDevTestTrees_PTB "
                "from https://nlp.stanford.edu/sentiment/), or train.jsonl, dev.jsonl, test.jsonl "
                'with one {"text": ..., "label": ...} per line; or fill a local Hugging Face cache '
                "while online and rerun with HF_DATASETS_OFFLINE=1."
            ) from exc
        examples = []
        for row, item in enumerate(table, start=1):
            tokens = tuple(str(item["text"]).split())
            if not tokens:
                raise DataError(where, row, "empty text")
            if len(tokens) > max_tokens:
                raise _too_long(where, row, len(tokens), max_tokens)
            examples.append(TextExample(row, tokens, int(item["label"])))
        splits[split], names[split] = examples, where
    stats = {s: ReadStats(examples=len(v)) for s, v in splits.items()}
    return SstData(splits, TREE_LABELS, "hub", names, stats)


def load_splits(
    config: Sst5Config,
    data_dir: str | None,
    demo: Callable[[], Path],
    limit: int | None = None,
) -> SstData:
    """The splits of a configuration: its explicit files, else ``data_dir``, else the DEMO set
    (``demo()`` builds it), read by :func:`load_data`; every split's statistics name the file.

    ``limit``: tree files are read only as far as their first ``limit`` examples
    (:func:`load_data`).

    Raises:
        ValueError: only one of ``train_file`` and ``dev_file`` is given.
    """
    if (config.train_file is None) != (config.dev_file is None):
        raise ValueError("train_file and dev_file must be given together")
    named = {"train": config.train_file, "dev": config.dev_file, "test": config.test_file}
    files: dict[str, str | Path] = {s: path for s, path in named.items() if path is not None}
    folder = data_dir if data_dir is not None or files else str(demo())
    data = load_data(
        folder,
        files=files or None,
        phrases=config.train_subtrees,
        min_tokens=config.min_phrase_tokens,
        max_tokens=config.max_tokens,
        limit=limit,
    )
    for split, split_stats in data.stats.items():
        split_stats.source = split_stats.source or str(data.files.get(split, ""))
    return data
