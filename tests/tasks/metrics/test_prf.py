"""The one precision / recall / F1 counter."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.core import safe_ratio
from tasks.metrics.prf import PRF, span_f1_from_totals


def test_counts_give_precision_recall_f1() -> None:
    prf = PRF.from_counts(correct=2, predicted=4, gold=3)
    assert (prf.precision, prf.recall) == (0.5, pytest.approx(2 / 3))
    assert prf.f1 == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert (prf.correct, prf.predicted, prf.gold, prf.excess, prf.missed) == (2, 4, 3, 2, 1)


def test_from_errors_is_srl_eval_vocabulary() -> None:
    assert PRF.from_errors(correct=1, excess=2, missed=3) == PRF.from_counts(1, 3, 4)
    assert PRF.from_errors() == PRF()


def test_undefined_ratios_are_zero() -> None:
    assert PRF().scores(100) == (0.0, 0.0, 0.0)
    only_gold = PRF.from_counts(correct=0, predicted=0, gold=5)
    assert (only_gold.precision, only_gold.recall, only_gold.f1) == (0.0, 0.0, 0.0)
    only_predicted = PRF.from_errors(excess=2)
    assert only_predicted.as_dict(scale=100) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}


def test_sum_is_micro_average() -> None:
    total = PRF.from_counts(1, 1, 2) + PRF.from_counts(0, 3, 0)
    assert total == PRF.from_counts(1, 4, 2)
    assert sum([PRF.from_counts(1, 1, 2), PRF.from_counts(0, 3, 0)], PRF()) == total
    assert total.precision == 0.25 and total.recall == 0.5


def test_fractional_numerators_and_scaled_dict() -> None:
    prf = PRF(recall_num=1.5, recall_den=3, precision_num=0.5, precision_den=2)
    assert (prf.recall, prf.precision) == (0.5, 0.25)
    # scale is applied before dividing, as conlleval and srl-eval.pl compute percentages
    assert prf.as_dict(scale=100) == {
        "precision": 100 * 0.5 / 2,
        "recall": 100 * 1.5 / 3,
        "f1": 2 * 25.0 * 50.0 / 75.0,
    }


def test_safe_ratio_on_floats_and_arrays() -> None:
    assert safe_ratio(1.0, 4.0) == 0.25 and safe_ratio(3.0, 0.0) == 0.0
    num, den = np.array([1.0, 3.0, 0.0, 2.0]), np.array([4.0, 0.0, 0.0, 3.0])
    got = safe_ratio(num, den)
    pairs = zip(num.tolist(), den.tolist(), strict=True)
    assert got.tolist() == [safe_ratio(n, d) for n, d in pairs]
    assert got.tolist()[:3] == [0.25, 0.0, 0.0]


def test_span_f1_on_columns_is_the_f1_of_each_row() -> None:
    rows = [(2.0, 4.0, 3.0), (0.0, 0.0, 0.0), (5.0, 5.0, 5.0), (0.0, 7.0, 0.0), (1.0, 3.0, 6.0)]
    columns = [np.array(c) for c in zip(*rows, strict=True)]
    expected = [PRF.from_counts(*map(int, r)).f1 for r in rows]
    assert span_f1_from_totals(columns).tolist() == pytest.approx(expected, abs=1e-15)
    assert span_f1_from_totals(columns).tolist() == [span_f1_from_totals(r) for r in rows]
