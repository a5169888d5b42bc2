"""SRL precision/recall/F1 with the semantics of srl-eval.pl (CoNLL-2005 shared task scorer).

The official scorer of He et al. (2017) and Peters et al. (2018) §4 is ``srl-eval.pl`` by Carreras &
Màrquez (CoNLL-2005), run on two *props* files. This module re-implements its counting; the facts
below are the script's behaviour, re-expressed here:

* Props file: one token per line; column 1 is the target verb (any string) on predicate rows and
  ``-`` elsewhere; then one Start-End column per predicate, the i-th column belonging to the i-th
  predicate row; a blank line ends a sentence.
* Start-End tags: ``(A0*`` opens, ``*)`` (or ``*A0)``) closes, ``(A1*)`` is one token; phrases may
  nest. Every phrase, nested or not, becomes an argument, listed by start then longest first.
* Continuation: a ``C-X`` phrase is merged into the most recent preceding ``X`` argument, which then
  becomes one *discontinuous* argument spanning from its first to its last piece; a ``C-X`` with no
  ``X`` before it becomes a plain ``X`` argument. ``R-X`` stays a type of its own.
* Matching (``discriminate_args``): a predicted argument is correct when the gold argument with the
  same start and end has the same type and, for discontinuous arguments, exactly the same pieces;
  a continuous and a discontinuous argument never match. Otherwise it is *excess*; unmatched gold
  arguments are *missed*. An argument whose phrase contains nested phrases counts as discontinuous
  with the nested phrases as its pieces (a quirk kept for parity).
* ``V`` is excluded: counted separately, not in the overall line.
* Propositions are aligned by predicate position. A gold proposition without a prediction, or whose
  predicted verb string differs, counts all its gold arguments as missed (the prediction's arguments
  are not counted as excess). A predicted proposition without gold is skipped with a warning.
* precision = 100·correct/(correct+excess), recall = 100·correct/(correct+missed), F1 their
  harmonic mean; 0 when a denominator is 0. "Perfect props" = propositions without excess or
  missed arguments.

Deviations, all on malformed input only: ragged lines, a column count that differs from the number
of predicate rows (the script warns and continues), a sentence-count or sentence-length mismatch
between the files, and two consecutive blank lines inside a file (the script would silently stop
reading there) raise instead of being tolerated.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tasks.common.io import DataError, iter_lines
from tasks.metrics.prf import PRF, OverallPercent

__all__ = [
    "EXCLUDED_TYPES",
    "Argument",
    "Proposition",
    "PropsColumn",
    "PropsSentence",
    "SrlEvaluation",
    "evaluate_props",
    "evaluate_props_files",
    "proposition_from_tags",
    "read_props",
    "write_props",
]

EXCLUDED_TYPES = frozenset({"V"})  # srl-eval.pl: my %excluded = ( V => 1 )

_OPEN = re.compile(r"\(([^*()\s]+)")
_CLOSE = re.compile(r"([^()\s]*)\)")


@dataclass(frozen=True)
class Argument:
    """An argument as srl-eval.pl sees it.

    Attributes:
        label: its type (``A0``, ``R-A0``; a merged ``C-`` argument carries its base type).
        start: first token.
        end: last token (of the last piece for a discontinuous argument).
        pieces: ``(start, end)`` of each piece of a discontinuous argument; empty when continuous.
    """

    label: str
    start: int
    end: int
    pieces: tuple[tuple[int, int], ...] = ()

    @property
    def continuous(self) -> bool:
        """True for a single-phrase argument (srl-eval's ``single``)."""
        return not self.pieces


@dataclass(frozen=True)
class Proposition:
    """A predicate (its verb string and row) with its arguments."""

    verb: str
    position: int
    arguments: tuple[Argument, ...]


@dataclass(frozen=True)
class PropsSentence:
    """One sentence of a props file: its length and its propositions."""

    length: int
    propositions: tuple[Proposition, ...]


@dataclass(frozen=True)
class PropsColumn:
    """One proposition to write: predicate row, verb string and its Start-End column."""

    position: int
    verb: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class SrlEvaluation(OverallPercent):
    """srl-eval.pl's report (argument counts as :class:`~tasks.metrics.prf.PRF`, built by
    :meth:`~tasks.metrics.prf.PRF.from_errors`).

    Attributes:
        overall: counts over all non-excluded types (the "Overall" line).
        per_type: counts per non-excluded type.
        excluded: counts for excluded types (``V``).
        num_sentences: sentences read.
        num_propositions: gold propositions scored.
        perfect_propositions: propositions with no excess and no missed argument.
        unmatched_predictions: predicted propositions without gold, skipped.
    """

    overall: PRF
    per_type: Mapping[str, PRF] = field(default_factory=dict)
    excluded: Mapping[str, PRF] = field(default_factory=dict)
    num_sentences: int = 0
    num_propositions: int = 0
    perfect_propositions: int = 0
    unmatched_predictions: int = 0

    @property
    def perfect_percent(self) -> float:
        """Perfect propositions in percent of the gold ones (0 without propositions)."""
        if not self.num_propositions:
            return 0.0
        return 100.0 * self.perfect_propositions / self.num_propositions

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly report; percentages in percent as the script prints them."""
        perfect = self.perfect_percent
        return {
            **self.overall.as_dict(scale=100),
            "overall": _counts_dict(self.overall),
            "per_type": {t: _counts_dict(c) for t, c in sorted(self.per_type.items())},
            "excluded": {t: _counts_dict(c) for t, c in sorted(self.excluded.items())},
            "num_sentences": self.num_sentences,
            "num_propositions": self.num_propositions,
            "perfect_propositions": perfect,
            "unmatched_predictions": self.unmatched_predictions,
        }


def _counts_dict(counts: PRF) -> dict[str, float]:
    """srl-eval.pl's line for one type: correct / excess / missed and percentages."""
    return {
        "correct": counts.correct,
        "excess": counts.excess,
        "missed": counts.missed,
        **counts.as_dict(scale=100),
    }


# --------------------------------------------------------------------------------------------------
# Start-End tags -> arguments (srl-eval.pl: phrase_set->load_SE_tagging, prop->load_SE_tagging)


class _Phrase:
    __slots__ = ("start", "end", "label", "children")

    def __init__(self, start: int, end: int, label: str) -> None:
        self.start = start
        self.end = end
        self.label = label
        self.children: list[_Phrase] = []

    def dfs(self) -> Iterator[_Phrase]:
        yield self
        for child in self.children:
            yield from child.dfs()


def _phrases(tags: Sequence[str]) -> list[_Phrase]:
    """All phrases of a Start-End column, by start then longest first (nested ones included)."""
    table: dict[tuple[int, int], _Phrase] = {}
    stack: list[_Phrase] = []
    for position, tag in enumerate(tags):
        rest = tag
        while not rest.startswith("*"):
            match = _OPEN.match(rest)
            if match is None:
                raise ValueError(f"bad Start-End tag {tag!r} at token {position}")
            stack.append(_Phrase(position, -1, match.group(1)))
            rest = rest[match.end() :]
        rest = rest[1:]
        while rest:
            match = _CLOSE.match(rest)
            if match is None:
                raise ValueError(f"bad Start-End tag {tag!r} at token {position}")
            if not stack:
                raise ValueError(f"phrase closed but never opened in {tag!r} at token {position}")
            phrase = stack.pop()
            if match.group(1) and match.group(1) != phrase.label:
                raise ValueError(f"phrase {phrase.label!r} closed as {match.group(1)!r}")
            phrase.end = position
            if stack:
                stack[-1].children.append(phrase)
            else:
                for inner in phrase.dfs():  # a later phrase with the same span replaces an earlier
                    table[(inner.start, inner.end)] = inner
            rest = rest[match.end() :]
    if stack:
        raise ValueError(f"phrase {stack[-1].label!r} opened at token {stack[-1].start} unclosed")
    return [table[key] for key in sorted(table, key=lambda se: (se[0], -se[1]))]


def proposition_from_tags(verb: str, position: int, tags: Sequence[str]) -> Proposition:
    """Build a proposition from its Start-End column, merging ``C-`` pieces as srl-eval.pl does.

    Raises:
        ValueError: the column is not valid Start-End notation.
    """
    arguments: list[_Phrase] = []
    latest: dict[str, _Phrase] = {}
    for phrase in _phrases(tags):
        if phrase.label.startswith("C-"):
            base = phrase.label[2:]
            head = latest.get(base)
            if head is not None:
                if not head.children:  # the head becomes its own first piece
                    head.children.append(_Phrase(head.start, head.end, base))
                head.children.append(phrase)
                head.end = phrase.end
                continue
            phrase.label = base  # continuation without a head: a regular argument
        arguments.append(phrase)
        latest[phrase.label] = phrase
    return Proposition(
        verb=verb,
        position=position,
        arguments=tuple(
            Argument(a.label, a.start, a.end, tuple((c.start, c.end) for c in a.children))
            for a in arguments
        ),
    )


# --------------------------------------------------------------------------------------------------
# scoring


def _discriminate(
    gold: Proposition, predicted: Proposition
) -> tuple[list[str], list[str], list[str]]:
    """Types of the correct, excess and missed arguments (srl-eval.pl ``discriminate_args``)."""
    remaining: dict[tuple[int, int], Argument] = {}
    for argument in gold.arguments:
        remaining[(argument.start, argument.end)] = argument
    correct: list[str] = []
    excess: list[str] = []
    for argument in predicted.arguments:
        span = (argument.start, argument.end)
        reference = remaining.get(span)
        if reference is None or reference.label != argument.label:
            excess.append(argument.label)
        elif reference.continuous != argument.continuous:
            excess.append(argument.label)
        elif reference.continuous or (
            len(set(argument.pieces)) == len(argument.pieces)
            and set(argument.pieces) == set(reference.pieces)
        ):
            correct.append(argument.label)
            del remaining[span]
        else:
            excess.append(argument.label)
    return correct, excess, [argument.label for argument in remaining.values()]


class _Tally:
    def __init__(self) -> None:
        self.types: dict[str, list[int]] = {}

    def add(self, label: str, slot: int) -> None:
        self.types.setdefault(label, [0, 0, 0])[slot] += 1

    def counts(self, excluded: bool) -> dict[str, PRF]:
        return {
            label: PRF.from_errors(*values)
            for label, values in self.types.items()
            if (label in EXCLUDED_TYPES) == excluded
        }


def evaluate_props(
    gold: Iterable[PropsSentence], predicted: Iterable[PropsSentence]
) -> SrlEvaluation:
    """Score predicted propositions against gold ones, sentence by sentence, as srl-eval.pl does.

    Raises:
        ValueError: the two sequences have different numbers of sentences, or a sentence differs in
            length.
    """
    tally = _Tally()
    num_sentences = num_propositions = perfect = unmatched = 0
    gold_iter, predicted_iter = iter(gold), iter(predicted)
    while True:
        gold_sentence = next(gold_iter, None)
        predicted_sentence = next(predicted_iter, None)
        if gold_sentence is None or predicted_sentence is None:
            if gold_sentence is not predicted_sentence:
                raise ValueError(
                    f"gold and predicted props differ in sentence count (after {num_sentences})"
                )
            break
        if gold_sentence.length != predicted_sentence.length:
            raise ValueError(
                f"sentence {num_sentences}: gold has {gold_sentence.length} tokens, "
                f"prediction {predicted_sentence.length}"
            )
        by_position = {p.position: p for p in predicted_sentence.propositions}
        gold_positions = {p.position for p in gold_sentence.propositions}
        unmatched += sum(1 for position in by_position if position not in gold_positions)
        for gold_prop in sorted(gold_sentence.propositions, key=lambda p: p.position):
            prediction = by_position.get(gold_prop.position)
            if prediction is None or prediction.verb != gold_prop.verb:
                prediction = Proposition(gold_prop.verb, gold_prop.position, ())
            num_propositions += 1
            correct, excess, missed = _discriminate(gold_prop, prediction)
            for slot, labels in enumerate((correct, excess, missed)):
                for label in labels:
                    tally.add(label, slot)
            if not any(label not in EXCLUDED_TYPES for label in excess + missed):
                perfect += 1
        num_sentences += 1
    per_type = tally.counts(excluded=False)
    return SrlEvaluation(
        overall=sum(per_type.values(), PRF()),
        per_type=per_type,
        excluded=tally.counts(excluded=True),
        num_sentences=num_sentences,
        num_propositions=num_propositions,
        perfect_propositions=perfect,
        unmatched_predictions=unmatched,
    )


# --------------------------------------------------------------------------------------------------
# props files


def read_props(path: str | Path) -> Iterator[PropsSentence]:
    """Stream the sentences of a props file.

    Raises:
        DataError: invalid UTF-8, empty file, ragged lines, column count ≠ number of predicate rows,
            malformed Start-End tags, or a blank line that ends no sentence (two in a row, or
            at the top) before more sentences.
    """
    rows: list[tuple[int, list[str]]] = []
    stray_blank: int | None = None

    def finish() -> PropsSentence:
        first_line, first = rows[0]
        for line, columns in rows:
            if len(columns) != len(first):
                raise DataError(
                    path,
                    line,
                    f"expected {len(first)} columns as on line {first_line}, found {len(columns)}",
                )
        targets = [i for i, (_, columns) in enumerate(rows) if columns[0] != "-"]
        if len(targets) != len(first) - 1:
            raise DataError(
                path,
                first_line,
                f"sentence has {len(targets)} predicate rows but {len(first) - 1} argument columns",
            )
        propositions = []
        for k, position in enumerate(targets):
            tags = [columns[k + 1] for _, columns in rows]
            try:
                propositions.append(proposition_from_tags(rows[position][1][0], position, tags))
            except ValueError as exc:
                raise DataError(path, first_line, f"column {k + 2}: {exc}") from None
        return PropsSentence(len(rows), tuple(propositions))

    for line, text in iter_lines(path):
        columns = text.split()
        if not columns:
            if rows:
                yield finish()
                rows = []
            elif stray_blank is None:
                stray_blank = line
            continue
        if stray_blank is not None:
            raise DataError(
                path,
                stray_blank,
                "blank line that ends no sentence (srl-eval.pl would stop reading here)",
            )
        rows.append((line, columns))
    if rows:
        yield finish()


def write_props(path: str | Path, sentences: Iterable[tuple[int, Sequence[PropsColumn]]]) -> None:
    """Write a props file that srl-eval.pl (and :func:`read_props`) can read.

    Args:
        path: output file.
        sentences: per sentence, ``(length, columns)``; one column per proposition, positions
            distinct (written in position order). Each sentence is followed by a blank line.

    Raises:
        ValueError: two columns share a position, a column has the wrong length or position, or a
            verb string cannot be written (empty, ``-`` or containing whitespace).
    """
    with Path(path).open("w", encoding="utf-8") as handle:
        for length, columns in sentences:
            ordered = sorted(columns, key=lambda c: c.position)
            verbs = ["-"] * length
            for column in ordered:
                if not 0 <= column.position < length or verbs[column.position] != "-":
                    raise ValueError(f"bad or repeated predicate position {column.position}")
                if len(column.tags) != length:
                    raise ValueError(f"{len(column.tags)} tags for a sentence of {length} tokens")
                verb = column.verb
                if not verb or verb == "-" or any(ch.isspace() for ch in verb):
                    raise ValueError(f"verb string {verb!r} cannot be written to a props file")
                verbs[column.position] = verb
            for i in range(length):
                handle.write(" ".join([verbs[i], *(c.tags[i] for c in ordered)]) + "\n")
            handle.write("\n")


def evaluate_props_files(gold_path: str | Path, predicted_path: str | Path) -> SrlEvaluation:
    """Score two props files (``srl-eval.pl GOLD PRED``).

    Raises:
        DataError: a file is malformed.
        ValueError: the files do not align sentence by sentence.
    """
    return evaluate_props(read_props(gold_path), read_props(predicted_path))
