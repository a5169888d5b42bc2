"""Chunk-level precision / recall / F1 exactly as conlleval computes them.

Re-implements the scoring rules of ``conlleval`` (Erik Tjong Kim Sang, version 2004-01-26), the
official scorer of the CoNLL-2000 chunking and CoNLL-2002/2003 NER shared tasks, from its documented
behaviour (the code here is our own):

* A tag ``P-TYPE`` splits at the **first** hyphen (types may contain hyphens); a tag without a
  hyphen has type ``""``. A type that Perl reads as false (``"0"``) becomes ``""``.
* A chunk **starts** between tags (prev, cur) when: prev/cur is B/B, I/B, O/B, O/I, E/E, E/I or
  O/E; or cur is not ``O``/``.`` and its type differs from prev's; or cur is ``[`` or ``]``. So an
  ``I-X`` after ``O`` or after another type starts a chunk (IOB1 and IOB2 both score correctly).
* A chunk **ends** when (prev, cur) is B/B, B/O, I/B, I/O, E/E, E/I or E/O; or prev is not
  ``O``/``.`` and the types differ; or prev is ``[`` or ``]``.
* ``S-``, ``U-`` and ``L-`` prefixes have **no rule**: ``S-X S-X`` or ``B-X L-X B-X L-X`` are read
  as one chunk. Convert BIOES/BIOUL output to IOB before scoring (the writer does).
* A predicted chunk is correct when it starts and ends on the same tokens as a gold chunk of the
  same type (tracked incrementally as conlleval does, including its end-of-input rule).
* Accuracy counts tokens whose full tag (prefix and type) matches; boundaries are not tokens.
* ``raw`` (conlleval ``-r``): tags carry no prefix; the outside tag maps to ``O`` and every other
  tag becomes ``B-tag``, so each token is its own chunk.
* Precision, recall and F1 are percentages; 0 when undefined (as conlleval prints them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

BOUNDARY = "-X-"  # conlleval's sentence-boundary first field


def split_tag(tag: str) -> tuple[str, str]:
    """Split a tag like conlleval: ``"B-ORG-X"`` → ``("B", "ORG-X")``, ``"O"`` → ``("O", "")``."""
    prefix, sep, chunk_type = tag.partition("-")
    if not sep:
        return tag, ""
    return prefix, "" if chunk_type == "0" else chunk_type


def start_of_chunk(prev_tag: str, tag: str, prev_type: str, chunk_type: str) -> bool:
    """conlleval's ``startOfChunk``: does a chunk start at the current token?"""
    pair = (prev_tag, tag)
    if pair in _START_PAIRS or tag in ("[", "]"):
        return True
    return tag not in ("O", ".") and prev_type != chunk_type


def end_of_chunk(prev_tag: str, tag: str, prev_type: str, chunk_type: str) -> bool:
    """conlleval's ``endOfChunk``: did a chunk end at the previous token?"""
    pair = (prev_tag, tag)
    if pair in _END_PAIRS or prev_tag in ("[", "]"):
        return True
    return prev_tag not in ("O", ".") and prev_type != chunk_type


_START_PAIRS = frozenset(
    {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
)
_END_PAIRS = frozenset(
    {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
)


@dataclass(frozen=True)
class ChunkScore:
    """Chunk counts for one type (or overall) and the derived percentages."""

    gold: int
    predicted: int
    correct: int

    @property
    def precision(self) -> float:
        """Percent of predicted chunks that are correct (0 when nothing was predicted)."""
        return 100 * self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        """Percent of gold chunks that were found (0 when there are no gold chunks)."""
        return 100 * self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall, in percent (conlleval's FB1)."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def as_dict(self) -> dict[str, float | int]:
        """JSON-friendly view."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "gold": self.gold,
            "predicted": self.predicted,
            "correct": self.correct,
        }


@dataclass(frozen=True)
class ConllevalResult:
    """What conlleval reports: token accuracy, overall and per-type chunk scores."""

    tokens: int
    correct_tags: int
    overall: ChunkScore
    per_type: dict[str, ChunkScore] = field(default_factory=dict)  # sorted by type

    @property
    def accuracy(self) -> float:
        """Percent of tokens whose tag is exactly right (0 when there are no tokens)."""
        return 100 * self.correct_tags / self.tokens if self.tokens else 0.0

    @property
    def precision(self) -> float:
        """Overall chunk precision, percent."""
        return self.overall.precision

    @property
    def recall(self) -> float:
        """Overall chunk recall, percent."""
        return self.overall.recall

    @property
    def f1(self) -> float:
        """Overall chunk F1, percent."""
        return self.overall.f1

    def as_dict(self) -> dict[str, object]:
        """The evaluator's JSON: percentages (unrounded; conlleval prints 2 decimals) and counts."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "accuracy": self.accuracy,
            "tokens": self.tokens,
            "gold_chunks": self.overall.gold,
            "predicted_chunks": self.overall.predicted,
            "correct_chunks": self.overall.correct,
            "per_type": {name: score.as_dict() for name, score in self.per_type.items()},
        }


def score_rows(
    rows: Iterable[Sequence[str]], *, raw: bool = False, outside_tag: str = "O"
) -> ConllevalResult:
    """Score conlleval input rows: each row is one line's fields, gold and predicted tag last.

    An empty row, or one whose first field is ``-X-``, is a sentence boundary (as in conlleval).

    Args:
        rows: the fields of each line, in file order.
        raw: conlleval ``-r``: tags have no ``B-``/``I-`` prefix; each non-outside tag is a chunk.
        outside_tag: conlleval ``-o``: the outside tag in raw mode.

    Raises:
        ValueError: a non-boundary row has fewer than 2 fields.
    """
    gold_count: Counter[str] = Counter()
    predicted_count: Counter[str] = Counter()
    correct_count: Counter[str] = Counter()
    tokens = correct_tags = 0
    last_correct, last_correct_type = "O", ""
    last_guessed, last_guessed_type = "O", ""
    in_correct = False

    for index, fields in enumerate(rows):
        boundary = not fields or fields[0] == BOUNDARY
        if boundary:
            fields = (BOUNDARY, "O", "O")
        if len(fields) < 2:
            raise ValueError(f"row {index}: expected at least 2 fields (gold, predicted)")
        gold_tag, guessed_tag = fields[-2], fields[-1]
        if raw:
            gold_tag, guessed_tag = _raw(gold_tag, outside_tag), _raw(guessed_tag, outside_tag)
        guessed, guessed_type = split_tag(guessed_tag)
        correct, correct_type = split_tag(gold_tag)

        gold_ends = end_of_chunk(last_correct, correct, last_correct_type, correct_type)
        guess_ends = end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
        if in_correct:
            if gold_ends and guess_ends and last_guessed_type == last_correct_type:
                in_correct = False
                correct_count[last_correct_type] += 1
            elif gold_ends != guess_ends or guessed_type != correct_type:
                in_correct = False

        gold_starts = start_of_chunk(last_correct, correct, last_correct_type, correct_type)
        guess_starts = start_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
        if gold_starts and guess_starts and guessed_type == correct_type:
            in_correct = True
        if gold_starts:
            gold_count[correct_type] += 1
        if guess_starts:
            predicted_count[guessed_type] += 1
        if not boundary:
            if correct == guessed and guessed_type == correct_type:
                correct_tags += 1
            tokens += 1

        last_correct, last_correct_type = correct, correct_type
        last_guessed, last_guessed_type = guessed, guessed_type

    if in_correct:  # conlleval's end-of-input rule
        correct_count[last_correct_type] += 1

    types = sorted(set(gold_count) | set(predicted_count))
    per_type = {
        name: ChunkScore(gold_count[name], predicted_count[name], correct_count[name])
        for name in types
    }
    overall = ChunkScore(
        sum(gold_count.values()), sum(predicted_count.values()), sum(correct_count.values())
    )
    return ConllevalResult(tokens, correct_tags, overall, per_type)


def conlleval(
    gold: Iterable[Sequence[str]],
    predicted: Iterable[Sequence[str]],
    *,
    raw: bool = False,
    outside_tag: str = "O",
) -> ConllevalResult:
    """Score predicted tag sequences against gold ones, sentence by sentence, like conlleval.

    Equivalent to running conlleval on a file with one ``gold predicted`` line per token and a blank
    line after each sentence (what :func:`tasks.ner.evaluate.write_conlleval` writes).

    >>> r = conlleval([["I-PER", "I-PER", "O"]], [["B-PER", "I-PER", "O"]])
    >>> (r.f1, r.accuracy)  # same chunk, but one tag differs
    (100.0, 66.66666666666667)

    Raises:
        ValueError: the numbers of sentences, or of tags in a sentence, differ.
    """

    def rows() -> Iterable[Sequence[str]]:
        for index, (gold_tags, predicted_tags) in enumerate(zip(gold, predicted, strict=True)):
            if len(gold_tags) != len(predicted_tags):
                raise ValueError(
                    f"sentence {index}: {len(gold_tags)} gold tags but "
                    f"{len(predicted_tags)} predicted tags"
                )
            yield from zip(gold_tags, predicted_tags, strict=True)
            yield ()

    return score_rows(rows(), raw=raw, outside_tag=outside_tag)


def _raw(tag: str, outside_tag: str) -> str:
    """conlleval ``-r``: map the outside tag to ``O`` and prefix every other tag with ``B-``."""
    if tag == outside_tag:
        tag = "O"
    return tag if tag == "O" else f"B-{tag}"
