"""One precision / recall / F1 counter for every span and cluster metric of the benchmark.

Each official scorer the harness re-implements reduces to two ratios (Peters et al. 2018, §4 and
Table 1: SRL F1, coreference average F1, NER F1):

* ``conlleval`` (NER) and ``srl-eval.pl`` (SRL): precision = correct / predicted, recall = correct /
  gold, so both numerators are the same count. Build with :meth:`PRF.from_counts` (or
  :meth:`PRF.from_errors` in srl-eval's correct / excess / missed vocabulary).
* ``scorer.pl`` v8.01 (coreference MUC, B³, CEAF-e): the two numerators differ and may be
  fractional; build with the four fields directly.

Counters are summed with ``+`` (numerators and denominators add: a micro average). Every ratio is 0
when its denominator is 0, and F1 is 0 when precision + recall is 0, as all three scorers print.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tasks.core import Column, MetricSpec, UnitStatistics, safe_ratio

__all__ = ["F1", "PRF", "OverallPercent", "prf_scores", "span_f1_from_totals", "span_statistics"]

#: Micro F1 over spans (SRL, NER) as a fraction, shown in percent with one decimal.
F1 = MetricSpec("f1", label="F1", higher_is_better=True, scale=100.0, decimals=1)


@dataclass(frozen=True)
class PRF:
    """Precision and recall as numerator/denominator pairs.

    Attributes:
        recall_num: recall numerator (correct items, or a weighted sum such as B³'s).
        recall_den: recall denominator (gold items).
        precision_num: precision numerator (correct items, or a weighted sum).
        precision_den: precision denominator (predicted items).
    """

    recall_num: float = 0
    recall_den: float = 0
    precision_num: float = 0
    precision_den: float = 0

    @classmethod
    def from_counts(cls, correct: int, predicted: int, gold: int) -> PRF:
        """A counter of whole items: ``correct`` of ``predicted`` predictions and ``gold`` golds."""
        return cls(
            recall_num=correct, recall_den=gold, precision_num=correct, precision_den=predicted
        )

    @classmethod
    def from_errors(cls, correct: int = 0, excess: int = 0, missed: int = 0) -> PRF:
        """srl-eval.pl's vocabulary: ``excess`` wrong predictions, ``missed`` unfound golds."""
        return cls.from_counts(correct, correct + excess, correct + missed)

    def __add__(self, other: PRF) -> PRF:
        return PRF(
            self.recall_num + other.recall_num,
            self.recall_den + other.recall_den,
            self.precision_num + other.precision_num,
            self.precision_den + other.precision_den,
        )

    @property
    def correct(self) -> float:
        """Correct items (the precision numerator; equal to the recall one for counts)."""
        return self.precision_num

    @property
    def predicted(self) -> float:
        """Predicted items (the precision denominator)."""
        return self.precision_den

    @property
    def gold(self) -> float:
        """Gold items (the recall denominator)."""
        return self.recall_den

    @property
    def excess(self) -> float:
        """Predicted items that are not correct (srl-eval.pl's *excess*)."""
        return self.precision_den - self.precision_num

    @property
    def missed(self) -> float:
        """Gold items that were not found (srl-eval.pl's *missed*)."""
        return self.recall_den - self.recall_num

    def scores(self, scale: float = 1.0) -> tuple[float, float, float]:
        """``(precision, recall, f1)``, each multiplied by ``scale``.

        Computed as ``scale * num / den`` (the order conlleval and srl-eval.pl use with
        ``scale=100``), F1 as ``2PR / (P + R)`` of the scaled values; 0 where undefined.
        """
        return prf_scores(
            self.recall_num, self.recall_den, self.precision_num, self.precision_den, scale
        )

    @property
    def precision(self) -> float:
        """precision_num / precision_den as a fraction (0 when nothing was predicted)."""
        return self.scores()[0]

    @property
    def recall(self) -> float:
        """recall_num / recall_den as a fraction (0 when there is no gold item)."""
        return self.scores()[1]

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall as a fraction (0 when both are 0)."""
        return self.scores()[2]

    def as_dict(self, scale: float = 1.0) -> dict[str, float]:
        """``{"precision", "recall", "f1"}`` multiplied by ``scale`` (100 for percent)."""
        precision, recall, f1 = self.scores(scale)
        return {"precision": precision, "recall": recall, "f1": f1}


class OverallPercent:
    """Mixin for a scorer's report that holds an ``overall`` :class:`PRF`: its precision, recall
    and F1 in percent, as conlleval and srl-eval.pl print them."""

    overall: PRF

    @property
    def precision(self) -> float:
        """Overall precision, percent."""
        return self.overall.scores(100)[0]

    @property
    def recall(self) -> float:
        """Overall recall, percent."""
        return self.overall.scores(100)[1]

    @property
    def f1(self) -> float:
        """Overall F1, percent (conlleval's FB1)."""
        return self.overall.scores(100)[2]


def span_statistics(ids: Iterable[str], counts: Iterable[PRF]) -> UnitStatistics:
    """One ``(correct, predicted, gold)`` row per unit (a sentence: its spans' counts add).

    Args:
        ids: one stable id per unit.
        counts: each unit's counter (:meth:`PRF.from_counts`; e.g. conlleval's or srl-eval's
            ``overall`` of the unit alone).

    Returns:
        The units' statistics, in the order given.
    """
    rows = tuple((float(c.correct), float(c.predicted), float(c.gold)) for c in counts)
    return UnitStatistics(tuple(ids), rows)


def prf_scores(
    recall_num: Column,
    recall_den: Column,
    precision_num: Column,
    precision_den: Column,
    scale: float = 1.0,
) -> tuple[Column, Column, Column]:
    """:meth:`PRF.scores` of the four fields, as floats or as ``(m,)`` arrays (the bootstrap's
    column sums, :attr:`tasks.core.TaskSpec.metric_from_totals`)."""
    precision = safe_ratio(scale * precision_num, precision_den)
    recall = safe_ratio(scale * recall_num, recall_den)
    return precision, recall, safe_ratio(2 * precision * recall, precision + recall)


def span_f1_from_totals(totals: Sequence[Column]) -> Column:
    """Micro F1 from the column sums of ``(correct, predicted, gold)`` unit rows (conlleval,
    srl-eval): ``2c / (p + g)``, 0 when there is nothing to count; floats or ``(m,)`` arrays
    (:attr:`tasks.core.TaskSpec.metric_from_totals`)."""
    correct, predicted, gold = totals
    return safe_ratio(2 * correct, predicted + gold)
