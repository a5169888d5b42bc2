"""Accuracy: the metric of the classification tasks, its unit statistics and their total.

A unit (one classified example) contributes the row ``(correct, 1)``; the accuracy of any
multiset of units is the first column sum over the second (:func:`accuracy_from_totals`), which
is what paired bootstrap tests resample.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tasks.core import Column, MetricSpec, UnitStatistics, safe_ratio

#: Accuracy as a fraction, shown in percent with one decimal (paper Table 1).
ACCURACY = MetricSpec("accuracy", label="accuracy", higher_is_better=True, scale=100.0, decimals=1)


def accuracy_statistics(ids: Iterable[str], correct: Iterable[bool]) -> UnitStatistics:
    """One ``(correct, 1)`` row per unit.

    Args:
        ids: one stable id per unit.
        correct: whether each unit's prediction is right (a missing prediction is wrong).

    Returns:
        The units' statistics, in the order given.
    """
    return UnitStatistics(tuple(ids), tuple((float(c), 1.0) for c in correct))


def accuracy_from_totals(totals: Sequence[Column]) -> Column:
    """Accuracy from the column sums of ``(correct, 1)`` unit rows (0 for no units); floats or
    ``(m,)`` arrays (:attr:`tasks.core.TaskSpec.metric_from_totals`)."""
    return safe_ratio(totals[0], totals[1])
