"""Paired bootstrap: against a direct resampling reference, alignment by unit id, edge cases."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from experiments.significance import compare_runs, paired_bootstrap, read_units


def accuracy(totals: Sequence[float]) -> float:
    return totals[0] / totals[1]


def span_f1(totals: Sequence[float]) -> float:
    correct, predicted, gold = totals
    return 2 * correct / (predicted + gold) if predicted + gold else 0.0


def runs(rows: np.ndarray) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """One run per seed (rows: (seeds, units, k)), units named u0, u1, ..."""
    ids = tuple(f"u{i}" for i in range(rows.shape[1]))
    return [(ids, r) for r in rows]


def test_matches_direct_resampling() -> None:
    """The counts trick equals resampling the units themselves with the same random draws."""
    gen = np.random.default_rng(1)
    a = gen.integers(0, 3, (2, 40, 3)).astype(float)  # (seeds, units, k): span counts
    b = gen.integers(0, 3, (2, 40, 3)).astype(float)
    got = paired_bootstrap(runs(a), runs(b), span_f1, samples=200)
    rng = np.random.default_rng(0)
    diffs = []
    for _ in range(200):
        idx = rng.integers(0, 40, 40)
        mean_a = np.mean([span_f1(list(s[idx].sum(0))) for s in a])
        mean_b = np.mean([span_f1(list(s[idx].sum(0))) for s in b])
        diffs.append(mean_a - mean_b)
    low, high = np.percentile(diffs, [2.5, 97.5])
    observed = np.mean([span_f1(list(s.sum(0))) for s in a]) - np.mean(
        [span_f1(list(s.sum(0))) for s in b]
    )
    assert got.difference == pytest.approx(observed)
    assert (got.low, got.high) == pytest.approx((low, high))
    below, above = np.mean(np.array(diffs) <= 0), np.mean(np.array(diffs) >= 0)
    assert got.p_value == pytest.approx(min(1.0, max(2 * min(below, above), 1 / 201)))


def test_identical_and_dominating_systems() -> None:
    ones = np.ones((1, 30, 2))
    wrong = np.stack([np.zeros((1, 30)), np.ones((1, 30))], axis=-1)  # (1, 30, 2): 0 of 1
    same = paired_bootstrap(runs(ones), runs(ones), accuracy)
    assert same.difference == 0.0 and same.p_value == 1.0 and not same.significant
    better = paired_bootstrap(runs(ones), runs(wrong), accuracy, samples=500)
    assert better.difference == 1.0 and (better.low, better.high) == (1.0, 1.0)
    assert better.p_value == pytest.approx(1 / 501) and better.significant


def test_units_are_paired_by_id_not_position() -> None:
    gen = np.random.default_rng(2)
    a = gen.integers(0, 2, (1, 25, 1)).astype(float)
    a = np.concatenate([a, np.ones_like(a)], axis=-1)  # (correct, 1)
    b = gen.integers(0, 2, (1, 25, 1)).astype(float)
    b = np.concatenate([b, np.ones_like(b)], axis=-1)
    ids = tuple(f"u{i}" for i in range(25))
    perm = gen.permutation(25)
    shuffled = [(tuple(ids[i] for i in perm), b[0][perm])]
    assert paired_bootstrap(runs(a), runs(b), accuracy) == paired_bootstrap(
        runs(a), shuffled, accuracy
    )
    with pytest.raises(ValueError, match="different units"):
        paired_bootstrap(runs(a), [(ids[:-1] + ("other",), b[0])], accuracy)
    with pytest.raises(ValueError, match="same seeds"):
        paired_bootstrap(runs(a), [], accuracy)


def test_compare_runs_reads_stored_attachments() -> None:
    def stored(rows: list[list[float]]) -> dict[str, str]:
        ids = [f"q{i}" for i in range(len(rows))]
        return {"units-dev.json": json.dumps({"ids": ids, "rows": rows})}

    a = stored([[1.0, 1.0]] * 10)
    b = stored([[0.0, 1.0]] * 5 + [[1.0, 1.0]] * 5)
    result = compare_runs([a], [b], "dev", accuracy, samples=100)
    assert result is not None and result.difference == pytest.approx(0.5)
    assert compare_runs([a], [{}], "dev", accuracy) is None  # an older run without unit stats
    with pytest.raises(ValueError, match="ids"):
        read_units(json.dumps({"ids": ["x"], "rows": [[1.0], [2.0]]}))
