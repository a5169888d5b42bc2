"""PropBank roles over NLTK's WSJ sample → CoNLL-2012 v4 ``*.v4_gold_conll`` files.

Sources: the unified PropBank release's ``data/ontonotes/nw/wsj/{00,01}/*.gold_skel`` files
(github.com/propbank/propbank-release; the OntoNotes tokens, POS tags, parse bits, frames,
rolesets and argument columns, each word written ``[WORD]``) and the words of the same
sentences in the Penn Treebank sample that nltk_data ships (``packages/corpora/treebank.zip``,
``treebank/combined/wsj_NNNN.mrg``).

The conversion, per skeleton file (one WSJ document):

* **Words.** The treebank's leaves of each sentence, ``-NONE-`` elements (traces, empty
  complementisers) left out, give the words of the skeleton's tokens. OntoNotes splits some
  words the treebank keeps whole, at ``-``, ``\\/`` and ``%`` (``asbestos-related`` is
  ``asbestos - related``, the hyphen tagged ``HYPH``): each treebank word is split at a subset of
  its separators so that the pieces line up with the skeleton's tokens, a separator piece on a
  separator's tag and no other piece on ``HYPH``. Where several splits line up, words are split
  as little as possible, earlier words decided first, and within a word the earlier separator
  is split off first. Bracket tokens (``-LRB-``, ``-RCB-``) and dashes (``--``) stay whole.
* **Predicates.** Auxiliary rolesets (``be.03``, ``have.01``, ``do.01``, ``get.03``) are dropped:
  their argument columns go, and their lemma and frameset become ``-``. Arguments that covered
  only traces are not in the skeleton (its tokens have no traces).
* **Columns** (single spaces): document id (``nw/wsj/00/wsj_0001``), part ``0``, token index,
  word, POS, parse bit, lemma (the frame file), frameset (the roleset's sense number, or the
  whole roleset when its lemma is not the frame file's, as in ``show_up.02``), word sense ``-``,
  speaker ``-``, named entities ``*``, one argument column per kept predicate (``ARGn-DSP``
  written ``ARGn``; ``C-`` and ``R-`` arguments as the skeleton has them), coreference ``-``.
  Sentences end with a blank line; ``#begin document (ID); part 000`` and ``#end document``
  frame the document.
* **Split.** The skeleton files in path order: the first 80 % (``n * 8 // 10``) are ``train``,
  the next 10 % (up to ``n * 9 // 10``) ``development``, the rest held back (not written); each
  at ``<split>/data/english/annotations/<id>.v4_gold_conll``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from experiments.data.fetch.formats import FormatError, decode_utf8, one_source, read_member

__all__ = [
    "AUXILIARY_ROLESETS",
    "Sentence",
    "convert_document",
    "convert_propbank",
    "propbank_split",
    "read_skeleton",
    "read_treebank",
    "segmentations",
    "split_words",
]

#: Rolesets of auxiliary verbs, dropped with their argument columns.
AUXILIARY_ROLESETS = frozenset({"be.03", "have.01", "do.01", "get.03"})
#: Where a treebank word may be split, and the tags a separator piece may align with.
SEPARATOR_TAGS: dict[str, frozenset[str]] = {
    "-": frozenset({"HYPH", "SYM", ":"}),
    "\\/": frozenset({"SYM"}),
    "%": frozenset({"NN"}),
}
_SEPARATOR = re.compile(r"(-|\\/|%)")
_WHOLE = re.compile(r"-[LR][RCS]B-|-+")  # bracket tokens and dashes are never split
_MOST_SEPARATORS = 10  # beyond this, a word is only tried whole or split at every separator
_DSP = re.compile(r"(ARG\d)-DSP")
_ONTONOTES = "data/ontonotes/"
_SKELETON = ".gold_skel"
_TREEBANK_MEMBER = "treebank/combined/{name}.mrg"
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a source file.

    Attributes:
        line: the line it starts on (1-based), for messages.
        rows: treebank: ``(tag, word)`` leaves; skeleton: each token's whitespace-split fields.
    """

    line: int
    rows: tuple[tuple[str, ...], ...]


def read_treebank(text: str, where: str) -> list[Sentence]:
    """The sentences of a Penn Treebank ``.mrg`` file: each tree's ``(tag, word)`` leaves.

    Raises:
        FormatError: unbalanced brackets or text outside a tree (naming ``where`` and line).
    """
    sentences = []
    stack: list[list[object]] = []
    start = 0
    for number, line in enumerate(text.split("\n"), 1):
        for match in _TOKEN.finditer(line):
            token = match.group()
            if token == "(":
                if not stack:
                    start = number
                stack.append([])
            elif token == ")":
                if not stack:
                    raise FormatError(f"{where}:{number}: ')' closes no bracket")
                node = stack.pop()
                if stack:
                    stack[-1].append(node)
                else:
                    sentences.append(Sentence(start, tuple(_leaves(node, where, start))))
            elif stack:
                stack[-1].append(token)
            else:
                raise FormatError(f"{where}:{number}: {token!r} outside a tree")
    if stack:
        raise FormatError(f"{where}:{start}: the tree starting here is not closed")
    return sentences


def _leaves(node: list[object], where: str, line: int) -> list[tuple[str, str]]:
    if len(node) == 2 and all(isinstance(part, str) for part in node):
        return [(str(node[0]), str(node[1]))]
    found = []
    for index, child in enumerate(node):
        if isinstance(child, list):
            found += _leaves(child, where, line)
        elif index > 0:
            raise FormatError(f"{where}:{line}: a word {child!r} beside a subtree")
    return found


def read_skeleton(text: str, where: str) -> list[Sentence]:
    """The sentences of a ``.gold_skel`` file: each token's fields (document, sentence, index,
    ``[WORD]``, POS, parse bit, frame file, roleset, one argument column per predicate).

    Raises:
        FormatError: a token with too few fields, a sentence whose rows disagree in their number
            of fields, or whose predicates and argument columns differ in number.
    """
    sentences = []
    rows: list[tuple[str, ...]] = []
    start = 0
    lines = text.split("\n")
    for number, line in enumerate([*lines, ""], 1):
        fields = tuple(line.split())
        if fields:
            if not rows:
                start = number
            if len(fields) < 8 or fields[3] != "[WORD]":
                raise FormatError(f"{where}:{number}: expected a skeleton token line")
            if rows and len(fields) != len(rows[0]):
                first = len(rows[0])
                raise FormatError(
                    f"{where}:{number}: {len(fields)} fields, the sentence's first {first}"
                )
            rows.append(fields)
        elif rows:
            predicates = sum(row[7] != "-" for row in rows)
            if predicates != len(rows[0]) - 8:
                raise FormatError(
                    f"{where}:{start}: {predicates} predicates but {len(rows[0]) - 8} "
                    "argument columns"
                )
            sentences.append(Sentence(start, tuple(rows)))
            rows = []
    return sentences


@functools.lru_cache(maxsize=4096)
def segmentations(word: str) -> tuple[tuple[str, ...], ...]:
    """The ways ``word`` may be split: at every subset of its separators, each split-off
    separator a piece of its own; fewest pieces first, then the earlier split first."""
    parts = [part for part in _SEPARATOR.split(word) if part]
    separators = [i for i, part in enumerate(parts) if _SEPARATOR.fullmatch(part)]
    if _WHOLE.fullmatch(word) or not separators:
        return ((word,),)
    if len(separators) > _MOST_SEPARATORS:
        choices: list[tuple[int, ...]] = [(0,) * len(separators), (1,) * len(separators)]
    else:
        choices = list(itertools.product((0, 1), repeat=len(separators)))
    found = set()
    for choice in choices:
        cut = {index for index, chosen in zip(separators, choice, strict=True) if chosen}
        pieces: list[str] = []
        glue = False  # whether the next part joins the last piece
        for index, part in enumerate(parts):
            if index in cut:
                pieces.append(part)
                glue = False
            elif glue:
                pieces[-1] += part
            else:
                pieces.append(part)
                glue = True
        found.add(tuple(pieces))
    return tuple(sorted(found, key=lambda pieces: (len(pieces), [len(p) for p in pieces])))


def _fits(piece: str, tag: str, word: str) -> bool:
    if piece == word:
        return True
    if _SEPARATOR.fullmatch(piece):
        return tag in SEPARATOR_TAGS[piece]
    return tag != "HYPH"


def split_words(words: Sequence[str], tags: Sequence[str]) -> list[str] | None:
    """The treebank ``words`` split to line up with the skeleton's ``tags`` (one per token), as
    the module's rule says; ``None`` when no split lines up."""
    count = len(tags)

    @functools.cache
    def rest(word: int, token: int) -> tuple[str, ...] | None:
        if word == len(words):
            return () if token == count else None
        for pieces in segmentations(words[word]):
            end = token + len(pieces)
            if end <= count and all(
                _fits(piece, tags[token + k], words[word]) for k, piece in enumerate(pieces)
            ):
                tail = rest(word + 1, end)
                if tail is not None:
                    return pieces + tail
        return None

    found = rest(0, 0)
    return None if found is None else list(found)


def _frameset(lemma: str, roleset: str) -> str:
    base, _, sense = roleset.rpartition(".")
    return sense if base == lemma else roleset


def convert_document(skeleton: str, treebank: str, skeleton_name: str, treebank_name: str) -> str:
    """One document's ``.v4_gold_conll`` text.

    Args:
        skeleton: the ``.gold_skel`` file's text.
        treebank: the ``.mrg`` file's text (the same sentences, with their words).
        skeleton_name: how messages name the skeleton file.
        treebank_name: how messages name the treebank file.

    Raises:
        FormatError: a malformed file, a different number of sentences, a sentence whose words
            do not line up with its tokens, or more than one document id.
    """
    skeletons = read_skeleton(skeleton, skeleton_name)
    trees = read_treebank(treebank, treebank_name)
    if not skeletons or len(skeletons) != len(trees):
        raise FormatError(
            f"{skeleton_name} has {len(skeletons)} sentences but {treebank_name} {len(trees)}"
        )
    document = skeletons[0].rows[0][0].removeprefix("ontonotes/")
    out = [f"#begin document ({document}); part 000\n"]
    for sentence, tree in zip(skeletons, trees, strict=True):
        words = [word for tag, word in tree.rows if tag != "-NONE-"]
        tags = [row[4] for row in sentence.rows]
        pieces = split_words(words, tags)
        if pieces is None:
            raise FormatError(
                f"{skeleton_name}:{sentence.line}: its {len(tags)} tokens do not line up with "
                f"the {len(words)} words of {treebank_name}:{tree.line}"
            )
        rolesets = [row[7] for row in sentence.rows if row[7] != "-"]
        kept = [8 + i for i, roleset in enumerate(rolesets) if roleset not in AUXILIARY_ROLESETS]
        for row, word in zip(sentence.rows, pieces, strict=True):
            if row[0].removeprefix("ontonotes/") != document:
                raise FormatError(f"{skeleton_name}: a second document id {row[0]}")
            lemma, roleset = row[6], row[7]
            if roleset == "-" or roleset in AUXILIARY_ROLESETS:
                lemma = frameset = "-"
            else:
                frameset = _frameset(lemma, roleset)
            arguments = [_DSP.sub(r"\1", row[column]) for column in kept]
            fields = [document, "0", row[2], word, row[4], row[5], lemma, frameset, "-", "-", "*"]
            out.append(" ".join([*fields, *arguments, "-"]) + "\n")
        out.append("\n")
    out.append("#end document\n")
    return "".join(out)


def propbank_split(count: int) -> list[str]:
    """The split of each of ``count`` files in order: ``train`` (first 80 %), ``development``
    (next 10 %), ``test`` (the rest, held back)."""
    train, development = count * 8 // 10, count * 9 // 10
    return [
        "train" if index < train else "development" if index < development else "test"
        for index in range(count)
    ]


def convert_propbank(files: Mapping[str, Path], out: Path) -> None:
    """The PropBank SRL set: every ``data/ontonotes/**/*.gold_skel`` source with its words
    from the ``treebank.zip`` source, split and written below ``out``.

    Raises:
        FormatError: no skeleton, a document the treebank sample lacks, or a malformed file.
    """
    archive = one_source(files, "treebank.zip")
    skeletons = sorted(
        (name, local)
        for name, local in files.items()
        if name.endswith(_SKELETON) and name.startswith(_ONTONOTES)
    )
    if not skeletons:
        raise FormatError(f"no {_ONTONOTES}**/*{_SKELETON} source")
    splits = propbank_split(len(skeletons))
    for (name, path), split in zip(skeletons, splits, strict=True):
        if split == "test":
            continue
        document = name.removeprefix(_ONTONOTES).removesuffix(_SKELETON)
        member = _TREEBANK_MEMBER.format(name=PurePosixPath(document).name)
        treebank = decode_utf8(read_member(archive, member), f"{archive}:{member}")
        text = convert_document(
            decode_utf8(path.read_bytes(), str(path)), treebank, str(path), f"{archive}:{member}"
        )
        if not text.startswith(f"#begin document ({document});"):
            raise FormatError(f"{path}: its document id is not {document}")
        target = out / split / "data" / "english" / "annotations" / f"{document}.v4_gold_conll"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
