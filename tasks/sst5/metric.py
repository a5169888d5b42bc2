"""SST metrics: sentence-level (root) accuracy, fine-grained (5-class) and binary.

Peters et al. (2018), Table 1 reports 5-class test accuracy on the 2,210 test roots (54.7 ± 0.5
over 5 seeds). Binary accuracy follows the SST-2 convention: only sentences whose gold root is not
neutral count (1,821 of the 2,210 test roots); a fine-grained prediction is mapped 0, 1 → negative,
3, 4 → positive, and a **predicted neutral (2) counts as wrong** (it is neither polarity).
Scoring phrases instead of roots inflates accuracy; this module scores roots only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tasks.sst5.data import NUM_LABELS, to_binary


@dataclass(frozen=True)
class SstResult:
    """Root accuracies and the counts behind them.

    Attributes:
        sentences: number of scored roots.
        fine_correct: roots whose 5-class prediction is right (``None`` for binary predictions).
        binary_total: roots whose gold label is not neutral.
        binary_correct: of those, roots whose predicted polarity is right.
        predicted_neutral: of those, roots predicted neutral (counted wrong).
    """

    sentences: int
    fine_correct: int | None
    binary_total: int
    binary_correct: int
    predicted_neutral: int

    @property
    def fine_grained_accuracy(self) -> float | None:
        """5-class root accuracy in [0, 1], ``None`` for binary predictions."""
        if self.fine_correct is None:
            return None
        return self.fine_correct / self.sentences if self.sentences else 0.0

    @property
    def binary_accuracy(self) -> float:
        """Binary accuracy over non-neutral gold roots, in [0, 1]."""
        return self.binary_correct / self.binary_total if self.binary_total else 0.0

    def as_dict(self) -> dict[str, object]:
        """The evaluator's JSON: accuracies in percent and the counts."""
        fine = self.fine_grained_accuracy
        return {
            "fine_grained_accuracy": None if fine is None else 100 * fine,
            "binary_accuracy": 100 * self.binary_accuracy,
            "sentences": self.sentences,
            "fine_correct": self.fine_correct,
            "binary_sentences": self.binary_total,
            "binary_correct": self.binary_correct,
            "predicted_neutral_on_binary": self.predicted_neutral,
        }


def sst_accuracy(
    gold: Sequence[int], predicted: Sequence[int], *, binary_predictions: bool = False
) -> SstResult:
    """Score root predictions against gold fine-grained root labels (aligned by position).

    Args:
        gold: gold root labels, 0–4.
        predicted: predicted labels, 0–4 (or 0/1 when ``binary_predictions``).
        binary_predictions: predictions are polarities (0 negative, 1 positive); only binary
            accuracy is defined.

    Raises:
        ValueError: lengths differ or a label is out of range.

    >>> r = sst_accuracy([0, 2, 4, 3], [1, 2, 4, 2])
    >>> (r.fine_grained_accuracy, r.binary_accuracy)  # neutral on a positive root is wrong
    (0.5, 0.6666666666666666)
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    top = 2 if binary_predictions else NUM_LABELS
    fine_correct = binary_total = binary_correct = predicted_neutral = 0
    for index, (gold_label, label) in enumerate(zip(gold, predicted, strict=True)):
        if not 0 <= gold_label < NUM_LABELS or not 0 <= label < top:
            raise ValueError(f"item {index}: label out of range (gold {gold_label}, {label})")
        fine_correct += gold_label == label
        gold_polarity = to_binary(gold_label)
        if gold_polarity is None:
            continue
        polarity = label if binary_predictions else to_binary(label)
        binary_total += 1
        binary_correct += polarity == gold_polarity
        predicted_neutral += polarity is None
    return SstResult(
        len(gold),
        None if binary_predictions else fine_correct,
        binary_total,
        binary_correct,
        predicted_neutral,
    )


def label_accuracy(gold: Sequence[str], predicted: Sequence[str]) -> float:
    """Accuracy of predicted label names against gold label names (aligned by position), in
    [0, 1]: the metric of JSON-lines data with any label set.

    Raises:
        ValueError: lengths differ.

    >>> label_accuracy(["pos", "neg", "neg"], ["pos", "pos", "neg"])
    0.6666666666666666
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    correct = sum(g == p for g, p in zip(gold, predicted, strict=True))
    return correct / len(gold) if gold else 0.0
