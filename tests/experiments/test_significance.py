"""Significance tests: the seed-aware test against a brute-force computation of its formula, the
pooled bootstrap against direct resampling, Student's t, Holm, reading unit statistics, edge
cases, and calibration smoke checks."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
import pytest

from experiments.report import significance
from experiments.report.significance import (
    SAMPLES,
    Comparison,
    compare_runs,
    holm,
    pooled_bootstrap,
    read_units,
    seed_aware_test,
    t_quantile,
    t_two_sided,
)
from tasks.metrics.prf import span_f1_from_totals
from tests.conftest import REPO

Run = tuple[tuple[str, ...], np.ndarray]


def accuracy(totals: Sequence[float]) -> float:
    return totals[0] / totals[1]


def span_f1(totals: Sequence[float]) -> float:
    correct, predicted, gold = totals
    return 2 * correct / (predicted + gold) if predicted + gold else 0.0


def runs(rows: np.ndarray) -> list[Run]:
    """One run per seed (rows: (seeds, units, k)), units named u0, u1, ..."""
    ids = tuple(f"u{i}" for i in range(rows.shape[1]))
    return [(ids, r) for r in rows]


def brute_force_metrics(rows: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """``(samples, seeds)`` span F1 of every seed on every resample (rows (seeds, units, 3);
    draws (samples, units) unit indices), by indexing the units themselves."""
    return np.array([[span_f1(list(s[idx].sum(0))) for s in rows] for idx in draws])


def sample_cov(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.sum((x - x.mean()) * (y - y.mean())) / (len(x) - 1))


# --- Student's t ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("df", "quantile"),
    [
        (1, 12.706204736174703),
        (2, 4.302652729911275),
        (4, 2.7764451051977987),
        (10, 2.2281388519649385),
        (30, 2.0422724563012373),
        (None, 1.959963984540054),
    ],
)
def test_t_quantile_known_values(df: float | None, quantile: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(quantile, rel=1e-10)
    assert t_two_sided(quantile, df) == pytest.approx(0.05, rel=1e-9)


def test_t_tail_closed_forms() -> None:
    for t in (0.0, 0.3, 1.0, 2.5, 10.0, 300.0):
        assert t_two_sided(t, 1) == pytest.approx(1 - 2 * math.atan(t) / math.pi, rel=1e-10)
        assert t_two_sided(-t, 2) == pytest.approx(1 - t / math.sqrt(2 + t * t), rel=1e-10)
        assert t_two_sided(t, None) == pytest.approx(math.erfc(t / math.sqrt(2)), rel=1e-12)
    for df in (1.3, 2.7, 13.3, 250.5, 4e6):  # fractional (Welch–Satterthwaite) and large df
        q = t_quantile(0.975, df)
        assert t_two_sided(q, df) == pytest.approx(0.05, rel=1e-9)
        assert q > t_quantile(0.975, df * 2) > 1.959963984540054
    with pytest.raises(ValueError):
        t_quantile(0.4, 3)


def test_t_against_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    for df in (1, 1.7, 3, 8.9, 40, 1e3, 1e5):
        assert t_quantile(0.975, df) == pytest.approx(stats.t.ppf(0.975, df), rel=1e-10)
        for t in (0.05, 1.2, 3.3, 9.0):
            assert t_two_sided(t, df) == pytest.approx(2 * stats.t.sf(t, df), rel=1e-8)


# --- the seed-aware test ------------------------------------------------------------------


def test_seed_aware_matches_brute_force() -> None:
    """Unequal seed counts (3 vs 2): every quantity recomputed from its definition."""
    gen = np.random.default_rng(1)
    a = gen.integers(0, 4, (3, 40, 3)).astype(float)  # (seeds, units, k): span counts
    b = gen.integers(0, 4, (2, 40, 3)).astype(float)
    got = seed_aware_test(runs(a), runs(b), span_f1, samples=300)

    draws = np.random.default_rng(0).integers(0, 40, (300, 40))  # the test's draws (one chunk)
    boot_a, boot_b = brute_force_metrics(a, draws), brute_force_metrics(b, draws)
    obs_a = np.array([span_f1(list(s.sum(0))) for s in a])
    obs_b = np.array([span_f1(list(s.sum(0))) for s in b])
    difference = obs_a.mean() - obs_b.mean()
    same_a = [sample_cov(boot_a[:, s], boot_a[:, t]) for s in range(3) for t in range(3) if s != t]
    same_b = [sample_cov(boot_b[:, 0], boot_b[:, 1]), sample_cov(boot_b[:, 1], boot_b[:, 0])]
    cross = [sample_cov(boot_a[:, s], boot_b[:, t]) for s in range(3) for t in range(2)]
    unit = max(0.0, np.mean(same_a) + np.mean(same_b) - 2 * np.mean(cross))
    # the same unit term: the bootstrap variance of the seed-mean difference minus each system's
    # between-run (seed × unit) variance over its seed count
    diffs = boot_a.mean(1) - boot_b.mean(1)
    gamma_a = np.mean(np.var(boot_a - boot_a.mean(0), axis=1, ddof=1)) * 300 / 299
    gamma_b = np.mean(np.var(boot_b - boot_b.mean(0), axis=1, ddof=1)) * 300 / 299
    assert unit == pytest.approx(np.var(diffs, ddof=1) - gamma_a / 3 - gamma_b / 2)
    seed_a, seed_b = np.var(obs_a, ddof=1) / 3, np.var(obs_b, ddof=1) / 2
    se = math.sqrt(unit + seed_a + seed_b)
    df = se**4 / (seed_a**2 / 2 + seed_b**2 / 1)

    assert (got.seeds_a, got.seeds_b, got.units, got.samples) == (3, 2, 40, 300)
    assert got.scheme == "seed-aware" and not got.conditional and got.seeds == 2
    assert got.difference == pytest.approx(difference)
    assert got.df == pytest.approx(df)
    half = t_quantile(0.975, df) * se
    assert (got.low, got.high) == pytest.approx((difference - half, difference + half))
    assert got.p_value == pytest.approx(t_two_sided(difference / se, df))
    stats = pytest.importorskip("scipy.stats")
    assert got.p_value == pytest.approx(2 * stats.t.sf(abs(difference) / se, df), rel=1e-8)
    assert got == seed_aware_test(runs(a), runs(b), span_f1, samples=300)  # deterministic


def test_one_seed_is_conditional_unit_bootstrap() -> None:
    gen = np.random.default_rng(3)
    a = gen.integers(0, 4, (1, 30, 3)).astype(float)
    b = gen.integers(0, 4, (3, 30, 3)).astype(float)
    draws = np.random.default_rng(0).integers(0, 30, (200, 30))
    for first, second in ((a, b), (a, b[:1])):  # 1 vs 3 seeds, 1 vs 1
        got = seed_aware_test(runs(first), runs(second), span_f1, samples=200)
        diffs = brute_force_metrics(first, draws).mean(1) - brute_force_metrics(second, draws).mean(
            1
        )
        difference = np.mean([span_f1(list(s.sum(0))) for s in first]) - np.mean(
            [span_f1(list(s.sum(0))) for s in second]
        )
        se = float(np.std(diffs, ddof=1))
        assert got.conditional and got.df is None and got.scheme == "seed-aware"
        assert got.difference == pytest.approx(difference)
        assert got.p_value == pytest.approx(math.erfc(abs(difference) / se / math.sqrt(2)))
        half = 1.959963984540054 * se
        assert (got.low, got.high) == pytest.approx((difference - half, difference + half))


def test_identical_systems() -> None:
    gen = np.random.default_rng(4)
    a = runs(gen.integers(0, 4, (3, 25, 3)).astype(float))
    for first, second in ((a, a), (a[:1], a[:1])):
        same = seed_aware_test(first, second, span_f1, samples=100)
        assert same.difference == 0.0 and same.p_value == 1.0 and not same.significant
        assert same.low < 0 < same.high or same.low == same.high == 0.0


def test_all_right_against_all_wrong() -> None:
    """No variation anywhere: zero standard error, p = 0, a zero-width interval."""
    ones = np.ones((2, 30, 2))
    wrong = np.stack([np.zeros((2, 30)), np.ones((2, 30))], axis=-1)  # (2, 30, 2): 0 of 1
    better = seed_aware_test(runs(ones), runs(wrong), accuracy, samples=100)
    assert better.difference == 1.0 and (better.low, better.high) == (1.0, 1.0)
    assert better.p_value == 0.0 and better.significant and better.df is None


def test_seed_spread_widens_the_interval_over_the_pooled_test() -> None:
    """A dominates B by ~15 points but its seeds spread over 20 points: the pooled test is far
    more confident than the seed-aware one."""
    gen = np.random.default_rng(5)
    units = 400
    levels_a, levels_b = (0.9, 0.7, 0.8), (0.62, 0.63, 0.61)
    a = [gen.random(units) < p for p in levels_a]
    b = [gen.random(units) < p for p in levels_b]

    def rows(correct: list[np.ndarray]) -> np.ndarray:
        return np.stack([np.stack([c, np.ones(units)], axis=-1) for c in correct]).astype(float)

    new = seed_aware_test(runs(rows(a)), runs(rows(b)), accuracy, samples=500)
    old = pooled_bootstrap(runs(rows(a)), runs(rows(b)), accuracy, samples=500)
    assert new.difference == pytest.approx(old.difference) and new.difference > 0.1
    assert new.high - new.low > 2 * (old.high - old.low)
    assert new.p_value > old.p_value
    assert old.conditional and old.scheme == "pooled" and old.df is None
    assert new.df is not None and 2 <= new.df < 5  # dominated by A's seed term (2 df)


def test_units_are_paired_by_id_not_position() -> None:
    gen = np.random.default_rng(2)
    a = gen.integers(0, 2, (2, 25, 1)).astype(float)
    a = np.concatenate([a, np.ones_like(a)], axis=-1)  # (correct, 1)
    b = gen.integers(0, 2, (2, 25, 1)).astype(float)
    b = np.concatenate([b, np.ones_like(b)], axis=-1)
    ids = tuple(f"u{i}" for i in range(25))
    perm = gen.permutation(25)
    shuffled = [(tuple(ids[i] for i in perm), r[perm]) for r in b]
    for test in (seed_aware_test, pooled_bootstrap):
        assert test(runs(a), runs(b), accuracy) == test(runs(a), shuffled, accuracy)
        with pytest.raises(ValueError, match="different units"):
            test(runs(a), [(ids[:-1] + ("other",), b[0])] * 2, accuracy)
        with pytest.raises(ValueError, match="duplicate"):
            test(runs(a), [(ids[:-1] + ("u0",), b[0])] * 2, accuracy)
        with pytest.raises(ValueError, match="at least one run|same seeds"):
            test(runs(a), [], accuracy)
    with pytest.raises(ValueError, match="same seeds"):
        pooled_bootstrap(runs(a), runs(b)[:1], accuracy)


def test_pooled_matches_direct_resampling() -> None:
    """The counts trick equals resampling the units themselves with the same random draws."""
    gen = np.random.default_rng(1)
    a = gen.integers(0, 3, (2, 40, 3)).astype(float)  # (seeds, units, k): span counts
    b = gen.integers(0, 3, (2, 40, 3)).astype(float)
    got = pooled_bootstrap(runs(a), runs(b), span_f1, samples=200)
    draws = np.random.default_rng(0).integers(0, 40, (200, 40))
    diffs = brute_force_metrics(a, draws).mean(1) - brute_force_metrics(b, draws).mean(1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    observed = np.mean([span_f1(list(s.sum(0))) for s in a]) - np.mean(
        [span_f1(list(s.sum(0))) for s in b]
    )
    assert got.difference == pytest.approx(observed)
    assert (got.low, got.high) == pytest.approx((low, high))
    below, above = np.mean(diffs <= 0), np.mean(diffs >= 0)
    assert got.p_value == pytest.approx(min(1.0, max(2 * min(below, above), 1 / 201)))


def test_count_cache_and_chunks_are_transparent(monkeypatch: pytest.MonkeyPatch) -> None:
    gen = np.random.default_rng(6)
    a = runs(gen.integers(0, 4, (3, 50, 3)).astype(float))
    b = runs(gen.integers(0, 4, (3, 50, 3)).astype(float))
    cached = seed_aware_test(a, b, span_f1, samples=400)
    monkeypatch.setattr(significance, "_CACHE_ELEMENTS", 0)
    assert seed_aware_test(a, b, span_f1, samples=400) == cached
    monkeypatch.setattr(significance, "_CHUNK_ELEMENTS", 50 * 7)  # 7 samples per chunk
    blocks = significance._draw_counts(50, 400, 0)
    assert len(blocks) == 58 and all(
        block.sum(axis=1).tolist() == [50] * len(block) for block in blocks
    )
    chunked = seed_aware_test(a, b, span_f1, samples=400)  # other draws, same distribution
    assert chunked.difference == cached.difference
    assert chunked.high - chunked.low == pytest.approx(cached.high - cached.low, rel=0.2)


def test_non_finite_metric_raises() -> None:
    rows = np.zeros((2, 10, 2))
    rows[:, 0] = (1.0, 1.0)  # only unit 0 counts anything

    def ratio(totals: Sequence[float]) -> float:
        return totals[0] / totals[1] if totals[1] else math.nan  # no 0/0 guard

    for test in (seed_aware_test, pooled_bootstrap):
        with pytest.raises(ValueError, match="not finite on .* bootstrap samples"):
            test(runs(rows), runs(rows), ratio, samples=200)
        with pytest.raises(ValueError, match="not finite on 4 of 4 runs"):
            test(runs(rows), runs(rows), lambda _: math.inf, samples=200)
    bad = rows.copy()
    bad[0, 3, 1] = math.nan
    with pytest.raises(ValueError, match="non-finite"):
        seed_aware_test(runs(bad), runs(rows), accuracy)
    with pytest.raises(ValueError, match="2 bootstrap samples"):
        seed_aware_test(runs(rows), runs(rows), accuracy, samples=1)


# --- Holm, the result, stored statistics --------------------------------------------------


def test_holm_against_hand_computed_values() -> None:
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, max(0.04·1, 0.06) = 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1, monotone
    assert holm([0.02, 0.02, 0.9]) == pytest.approx([0.06, 0.06, 0.9])
    assert holm([0.2]) == [0.2] and holm([]) == []
    with pytest.raises(ValueError):
        holm([0.1, math.nan])


def test_significance_uses_the_adjusted_p_value() -> None:
    test = Comparison(0.02, 0.01, 0.03, 0.01, 100, 3, 5, SAMPLES, False, 4.2, "seed-aware")
    assert test.significant and test.seeds == 3 and test.adjusted_p is None
    assert not dataclasses.replace(test, adjusted_p=0.2).significant
    assert dataclasses.replace(test, p_value=0.3, adjusted_p=0.04).significant


def stored(rows: list[list[float]], ids: list[str] | None = None) -> str:
    ids = ids if ids is not None else [f"q{i}" for i in range(len(rows))]
    return json.dumps({"ids": ids, "rows": rows})


def test_read_units_rejects_bad_files() -> None:
    ids, rows = read_units(stored([[1.0, 1.0], [0.0, 1.0]]), "r1")
    assert ids == ("q0", "q1") and rows.shape == (2, 2)
    cases = {
        '{"ids": ["x"], "rows": [[1.0], [2.0]]}': "1 ids, rows of shape",
        '{"ids": ["x", "y"], "rows": [[1.0], [2.0, 3.0]]}': "equal length",
        '{"ids": ["x"], "rows": [1.0]}': "rows of shape",
        '{"ids": [], "rows": []}': "no units",
        '{"ids": [1, 2], "rows": [[1.0], [2.0]]}': "strings",
        '{"rows": []}': '"ids" and "rows"',
        '{"ids": ["x"], "rows": [[1.0]]': "not valid JSON",
        stored([[1.0]] * 4, ["a", "b", "a", "b"]): "2 duplicate unit ids, e.g. 'a', 'b'",
        '{"ids": ["x", "y"], "rows": [[1.0], [NaN]]}': "non-finite statistics for 1 units, e.g. 'y",
        '{"ids": ["x", "y"], "rows": [[Infinity], [1.0]]}': "e.g. 'x'",
    }
    for text, message in cases.items():
        with pytest.raises(ValueError, match="units-dev.json of run r7") as error:
            read_units(text, "units-dev.json of run r7")
        assert message in str(error.value), (text, str(error.value))


def test_compare_runs_reads_stored_attachments() -> None:
    def attachment(rows: list[list[float]]) -> dict[str, str]:
        return {"units-dev.json": stored(rows)}

    a = [attachment([[1.0, 1.0]] * 8 + [[0.0, 1.0]] * 2), attachment([[1.0, 1.0]] * 10)]
    b = [attachment([[0.0, 1.0]] * 5 + [[1.0, 1.0]] * 5)]
    result = compare_runs(a, b, "dev", accuracy, samples=100)
    assert result is not None and result.difference == pytest.approx(0.4)
    assert (result.seeds_a, result.seeds_b, result.conditional) == (2, 1, True)
    assert result.scheme == "seed-aware" and result.samples == 100
    assert compare_runs(a, [*b, b[0]], "dev", accuracy, samples=100).conditional is False
    assert compare_runs(a, [{}], "dev", accuracy) is None  # an older run without unit stats
    assert compare_runs([], b, "dev", accuracy) is None
    broken = [b[0], {"units-dev.json": stored([[1.0, 1.0]] * 10, ["q0"] * 10)}]
    with pytest.raises(ValueError, match="system B run 2"):
        compare_runs(a, broken, "dev", accuracy)


# --- calibration ------------------------------------------------------------------------------


def test_false_positive_rate_on_a_cheap_null_simulation() -> None:
    """Equal systems whose seeds shift accuracy by N(0, 3 points): the seed-aware test keeps its
    false-positive rate near 5 %, the pooled one does not (deterministic)."""
    gen = np.random.default_rng(7)
    units, seeds, sims = 80, 3, 200
    ids = tuple(f"u{i}" for i in range(units))
    rejected = {"seed-aware": 0, "pooled": 0}
    for _ in range(sims):
        difficulty = gen.normal(0.0, 1.5, units)  # (units,) shared by both systems
        sides = []
        for _system in range(2):
            offset = gen.normal(0.0, 0.15, (seeds, 1))  # (seeds, 1): ~3 points of accuracy
            p = 1 / (1 + np.exp(difficulty - 0.5 - offset))  # (seeds, units)
            correct = (gen.random((seeds, units)) < p).astype(float)
            sides.append([(ids, np.stack([c, np.ones(units)], axis=-1)) for c in correct])
        for test in (seed_aware_test, pooled_bootstrap):
            result = test(sides[0], sides[1], accuracy, samples=200)
            rejected[result.scheme] += result.p_value < 0.05
    assert rejected["seed-aware"] / sims <= 0.12
    assert rejected["pooled"] > rejected["seed-aware"]


def test_benchmark_quick_run() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "bench_significance.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"false_positive_rate_max", "power_2pt_3seeds"} <= set(report)
    assert 0.0 <= report["false_positive_rate_max"] <= 1.0 and report["quick"] is True
    assert "PASS" in done.stdout or "MISS" in done.stdout


def test_a_metric_for_floats_alone_gives_what_an_array_metric_gives() -> None:
    """The tasks' metrics take every bootstrap sample's sums at once; a metric written for floats
    (``span_f1`` here: its ``if`` raises on arrays) is called row by row, to the same result."""
    gen = np.random.default_rng(3)
    a = gen.integers(0, 4, (3, 30, 3)).astype(float)  # (seeds, units, k)
    b = gen.integers(0, 4, (3, 30, 3)).astype(float)
    with pytest.raises(ValueError):
        span_f1([np.zeros(2), np.zeros(2), np.zeros(2)])
    calls: list[int] = []

    def counted(totals: Sequence[float]) -> float:
        calls.append(1)
        return span_f1_from_totals(totals)

    assert seed_aware_test(runs(a), runs(b), span_f1, samples=200) == seed_aware_test(
        runs(a), runs(b), counted, samples=200
    )
    assert len(calls) == 2  # the observed runs, then one chunk of 200 samples × 6 runs


def test_count_cache_keeps_the_latest_matrices_within_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(significance, "_COUNT_CACHE", OrderedDict())
    monkeypatch.setattr(significance, "_CACHE_ELEMENTS", 50 * 400 + 30 * 400)
    first = significance._counts(50, 400, 0)
    assert significance._counts(50, 400, 0) is first  # kept
    significance._counts(30, 400, 0)
    assert list(significance._COUNT_CACHE) == [(50, 400, 0), (30, 400, 0)]
    significance._counts(40, 400, 0)  # 40 + 30 fit, 50 + 30 + 40 do not: the oldest goes
    assert list(significance._COUNT_CACHE) == [(30, 400, 0), (40, 400, 0)]
    again = significance._counts(50, 400, 0)
    assert again is not first and all(
        np.array_equal(x, y) for x, y in zip(again, first, strict=True)
    )
    significance._counts(100, 400, 0)  # over the bound alone: drawn, not kept
    assert (100, 400, 0) not in significance._COUNT_CACHE
