"""Chunk-level precision / recall / F1 exactly as conlleval computes them.

Re-implements the scoring rules of ``conlleval`` (Erik Tjong Kim Sang, version 2004-01-26), the
official scorer of the CoNLL-2000 chunking and CoNLL-2002/2003 NER shared tasks, from its documented
behaviour (the code here is our own; the chunk rules live in :mod:`tasks.common.spans`, which
decodes IOB tags with the same reading):

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

from tasks.common.spans import chunk_ends, chunk_starts, split_tag
from tasks.metrics.prf import PRF, OverallPercent

BOUNDARY = "-X-"  # conlleval's sentence-boundary first field


@dataclass(frozen=True)
class ConllevalResult(OverallPercent):
    """What conlleval reports: token accuracy, overall and per-type chunk counts.

    ``precision``, ``recall``, ``f1`` and :meth:`as_dict` are in percent as conlleval prints them;
    the :class:`~tasks.metrics.prf.PRF` counters themselves give fractions.
    """

    tokens: int
    correct_tags: int
    overall: PRF
    per_type: dict[str, PRF] = field(default_factory=dict)  # sorted by type

    @property
    def accuracy(self) -> float:
        """Percent of tokens whose tag is exactly right (0 when there are no tokens)."""
        return 100 * self.correct_tags / self.tokens if self.tokens else 0.0

    def as_dict(self) -> dict[str, object]:
        """The evaluator's JSON: percentages (unrounded; conlleval prints 2 decimals) and counts."""
        return {
            **self.overall.as_dict(scale=100),
            "accuracy": self.accuracy,
            "tokens": self.tokens,
            "gold_chunks": self.overall.gold,
            "predicted_chunks": self.overall.predicted,
            "correct_chunks": self.overall.correct,
            "per_type": {name: _chunk_dict(score) for name, score in self.per_type.items()},
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

        gold_ends = chunk_ends(last_correct, correct, last_correct_type, correct_type)
        guess_ends = chunk_ends(last_guessed, guessed, last_guessed_type, guessed_type)
        if in_correct:
            if gold_ends and guess_ends and last_guessed_type == last_correct_type:
                in_correct = False
                correct_count[last_correct_type] += 1
            elif gold_ends != guess_ends or guessed_type != correct_type:
                in_correct = False

        gold_starts = chunk_starts(last_correct, correct, last_correct_type, correct_type)
        guess_starts = chunk_starts(last_guessed, guessed, last_guessed_type, guessed_type)
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
        name: PRF.from_counts(correct_count[name], predicted_count[name], gold_count[name])
        for name in types
    }
    overall = sum(per_type.values(), PRF())
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


def _chunk_dict(score: PRF) -> dict[str, float]:
    """One type's line: percentages and chunk counts."""
    return {
        **score.as_dict(scale=100),
        "gold": score.gold,
        "predicted": score.predicted,
        "correct": score.correct,
    }


def _raw(tag: str, outside_tag: str) -> str:
    """conlleval ``-r``: map the outside tag to ``O`` and prefix every other tag with ``B-``."""
    if tag == outside_tag:
        tag = "O"
    return tag if tag == "O" else f"B-{tag}"
