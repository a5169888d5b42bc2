"""Stanford Sentiment Treebank reader (Socher et al., 2013) with a small PTB-bracket parser.

Format (``train.txt`` / ``dev.txt`` / ``test.txt``, 8,544 / 1,101 / 2,210 sentences): one sentence
per line as a fully labelled tree, e.g. ``(3 (2 It) (4 (2 's) (3 fine)))``. Every node carries a
sentiment label 0–4 (very negative … very positive); the root label is the sentence label, the inner
nodes give phrase labels. Tokens are kept as written (PTB escapes such as ``-LRB-`` are not undone).

Granularities: ``"5-class"`` keeps 0–4; ``"2-class"`` drops neutral (2) and maps 0, 1 → 0 and
3, 4 → 1 (the SST-2 convention). With ``subtrees=True`` every phrase becomes an example (training
on all phrases, as allennlp's ``use_subtrees``; Peters et al. 2018, appendix, trained on phrases of
≥ 4 tokens: ``min_tokens=4``). Evaluation uses roots only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from tasks.common.io import DataError, ReadStats, iter_lines, require_datasets

if TYPE_CHECKING:
    import datasets

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

    Grammar: ``tree := "(" LABEL (WORD | tree+) ")"``, ``LABEL`` an integer 0–4.

    Raises:
        ValueError: unbalanced brackets, a missing or bad label, an empty node, a node with several
            words or with both words and subtrees, or text outside the single tree; the message
            gives the 1-based column.
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
            if stack[-1].children or stack[-1].has_word:
                raise ValueError(f"column {column}: a node has several words or words and subtrees")
            stack[-1].has_word = True
            words.append(piece)
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
                    self.stats.skip(SKIP_SHORT)
                    continue
                label: int | None = phrase.label
                if self.granularity == "2-class":
                    label = to_binary(phrase.label)
                    if label is None:
                        self.stats.skip(SKIP_NEUTRAL)
                        continue
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
