"""SNLI metric: classification accuracy over the pairs that have a gold label.

Peters et al. (2018), Table 1 reports test accuracy (88.7 ± 0.17 over 5 seeds) on the 9,824 test
pairs left after dropping ``gold_label == "-"``. A pair without a prediction counts as wrong, so a
truncated prediction file cannot raise the score.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class AccuracyResult:
    """Accuracy and the counts behind it.

    Attributes:
        correct: labelled pairs predicted correctly.
        total: labelled pairs (the denominator).
        missing: pairIDs of labelled pairs without a prediction (counted as wrong), sorted.
        ignored: predictions for pairs without a gold label (not scored).
    """

    correct: int
    total: int
    missing: tuple[str, ...] = ()
    ignored: int = 0

    @property
    def accuracy(self) -> float:
        """Fraction correct in [0, 1] (0 when there are no labelled pairs)."""
        return self.correct / self.total if self.total else 0.0

    def as_dict(self, *, max_listed: int | None = None) -> dict[str, object]:
        """The evaluator's JSON: ``accuracy`` in percent, counts, and (some) missing ids."""
        listed = self.missing if max_listed is None else self.missing[:max_listed]
        return {
            "accuracy": 100 * self.accuracy,
            "correct": self.correct,
            "total": self.total,
            "missing": len(self.missing),
            "missing_ids": list(listed),
            "ignored_unlabeled": self.ignored,
        }


def accuracy(
    gold: Mapping[str, str], predictions: Mapping[str, str], *, ignored: int = 0
) -> AccuracyResult:
    """Accuracy of ``predictions`` (pairID → label) against ``gold`` (pairID → label).

    Predictions for ids not in ``gold`` are not scored here (the evaluator rejects unknown ids and
    passes the number of unlabeled-pair predictions as ``ignored``).

    >>> accuracy({"a": "neutral", "b": "entailment"}, {"a": "neutral"}).accuracy
    0.5
    """
    correct = sum(1 for pair_id, label in gold.items() if predictions.get(pair_id) == label)
    missing = tuple(sorted(pair_id for pair_id in gold if pair_id not in predictions))
    return AccuracyResult(correct, len(gold), missing, ignored)
