"""Significance tests between two systems scored on the same evaluation units, from the per-unit
statistics every run stores, with training-seed variance included (docs/significance.md).

**Data.** A run stores ``units-<split>.json`` (:class:`tasks.core.UnitStatistics`): one row of a
metric's sufficient statistics per evaluation unit (a question, a pair, a sentence, a document).
The metric of any multiset of units is ``metric_from_totals(column sums)`` (accuracy: rows
``(correct, 1)``; span F1: ``(correct, predicted, gold)``, ``F1 = 2c / (p + g)``; SQuAD: one F1
and exact match per question), so a bootstrap sample costs one matrix product whatever the metric:
a ``(samples, units)`` matrix of how often each unit was drawn times the ``(units, k)`` statistics.

**The seed-aware test** (:func:`seed_aware_test`, the default: :func:`compare_runs` uses it).
System A has ``n_a`` runs (training seeds), B has ``n_b`` (they may differ), all scored on the
same units. The observed difference is ``D = mean_s metric(A_s) − mean_s metric(B_s)`` over the
full unit set (what a table shows). Its variance over new test sets *and* new training seeds is
estimated as a sum of

- a **unit term** ``U``: the test-set sampling variance of ``D``, from a paired bootstrap over the
  shared units (Koehn 2004; Berg-Kirkpatrick et al. 2012): every sample draws unit indices once
  and applies them to every run of both systems. Of the bootstrap covariances between runs, only
  those between two *different* runs are used, ``U = c̄_AA + c̄_BB − 2 c̄_AB`` (``c̄_AA``: mean
  covariance over pairs of distinct runs of A; ``c̄_AB``: over all pairs of a run of A and a run
  of B). A run's covariance with itself also holds its own unit-level noise (the seed × unit
  interaction: which units a seed happens to get right), which the seed term below already holds;
  left in, it would be counted twice (this is the variance of the bootstrapped seed-mean
  difference minus ``Γ_A / n_a + Γ_B / n_b``, ``Γ`` the bootstrap's within-system variance
  between runs, as in a two-way crossed random-effects analysis of variance). ``U`` is floored
  at 0 (conservative);
- a **seed term** per system, ``S²_A / n_a`` and ``S²_B / n_b``: the sample variance (n − 1) of
  its per-seed metrics on the full unit set, over its number of seeds (Bouthillier et al. 2021:
  seeds are a source of variance of a benchmark result, to be sampled and counted).

``SE = sqrt(U + S²_A / n_a + S²_B / n_b)``; the reference distribution is Student's t with the
Welch–Satterthwaite degrees of freedom (Welch 1947; Satterthwaite 1946), the unit term counting as
infinite df: ``df = SE⁴ / ((S²_A/n_a)² / (n_a − 1) + (S²_B/n_b)² / (n_b − 1))``. The p-value is
two-sided, ``2 P(T_df > |D| / SE)``, and the 95 % interval ``D ± t_{df, 0.975} SE``. With no seed
spread on either side the reference is the normal distribution (``df`` None).

**One seed on either side**: a seed term cannot be estimated. The test is then the unit bootstrap
alone (``U`` = the bootstrap variance of the seed-mean difference, same-run covariances included,
normal reference) and the result is marked ``conditional``: it says whether *these* trained
models differ on the test distribution, not whether the two *training procedures* do.

**Why not simpler schemes.** Adding the full unit-bootstrap variance to the seed terms counts the
interaction twice: calibrated but conservative (false-positive rates of 1–4 % at nominal 5 % in
the benchmark, with less power). A two-level bootstrap (resample seeds, then units) with 3 seeds
underestimates the seed variance by ``(n − 1) / n`` and uses normal tails where 2 df call for t
tails: anti-conservative.

**The pooled test** (:func:`pooled_bootstrap`, used before the seed-aware test, kept for the
calibration benchmark): the same paired unit bootstrap of the seed-mean difference with the
seeds held fixed, a 95 % percentile interval and the bootstrap's sign-test p-value
(``1 / (samples + 1)`` at least). It is conditional on the seeds and therefore over-confident
about the training procedure: with no true difference and seeds that vary by 0.5 or 1 point
beyond the natural noise it rejects up to 11 % or 26 % of the time at a nominal 5 %
(``benchmarks/bench_significance.py``; the seed-aware test: at most 5.7 %).

**Assumptions.** Units are exchangeable draws from the test distribution and shared by both
systems (paired by id). Seeds are independent draws of the training randomness, independent
between the two systems (runs of A and B that share a seed number and so part of their
randomness only make the test more conservative). Seed and unit variance are additive (the
two-way random-effects model ``y = μ + seed + unit + seed × unit``; nonlinear metrics such as
F1 are handled by the bootstrap, to first order). The seed × unit interaction is counted once, in
the seed terms. The t reference with Welch–Satterthwaite df is an approximation (with 3 seeds
per side, 2 df each, it is the one Welch's test makes). Dror et al. (2018) review the choice of
test in NLP (resampling tests for metrics such as F1, whose distribution is not known).

**Several tests in one table** form one family: :func:`holm` gives Holm–Bonferroni adjusted
p-values (Holm 1979), which the renderer stores in :attr:`Comparison.adjusted_p`;
:attr:`Comparison.significant` uses the adjusted value when it is set. Intervals are not adjusted.

References:
    Koehn (2004), Statistical Significance Tests for Machine Translation Evaluation, EMNLP.
    Berg-Kirkpatrick, Burkett and Klein (2012), An Empirical Investigation of Statistical
    Significance in NLP, EMNLP-CoNLL.
    Welch (1947), The generalization of "Student's" problem when several different population
    variances are involved, Biometrika 34.
    Satterthwaite (1946), An approximate distribution of estimates of variance components,
    Biometrics Bulletin 2.
    Dror, Baumer, Shlomov and Reichart (2018), The Hitchhiker's Guide to Testing Statistical
    Significance in Natural Language Processing, ACL.
    Bouthillier et al. (2021), Accounting for Variance in Machine Learning Benchmarks, MLSys.
    Holm (1979), A Simple Sequentially Rejective Multiple Test Procedure, Scand. J. Statistics 6.

Results are deterministic: the resampling uses a fixed seed (a table renders the same p-values
every time).
"""

from __future__ import annotations

import json
import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

ALPHA = 0.05
SAMPLES = 10_000  # bootstrap samples (the unit term's variance to about 1.4 % relative error)

Run = tuple[Sequence[str], np.ndarray]  # (unit ids, (units, k) statistics) of one seed's run
Metric = Callable[[Sequence[float]], float]

_CHUNK_ELEMENTS = 1 << 21  # counts-matrix elements per chunk of samples (16 MiB of float64)
_CACHE_ELEMENTS = 1 << 24  # counts kept between calls, all matrices together (128 MiB)


@dataclass(frozen=True)
class Comparison:
    """System A minus system B on one split (the metric's natural units, e.g. 0–1).

    Attributes:
        difference: observed difference of the seed-mean metrics.
        low: lower end of the 95 % interval of the difference.
        high: upper end.
        p_value: two-sided p-value for "no difference".
        units: evaluation units (shared by every run).
        seeds_a: runs (seeds) of system A.
        seeds_b: runs (seeds) of system B.
        samples: bootstrap samples.
        conditional: the test holds the seeds fixed (one seed on a side, or the pooled
            scheme): it is about these trained models, not their training procedures.
        df: degrees of freedom of the t reference; None for the normal distribution.
        scheme: ``"seed-aware"`` (:func:`seed_aware_test`) or ``"pooled"``
            (:func:`pooled_bootstrap`).
        adjusted_p: Holm-adjusted p-value within the table's family of tests (set by the
            renderer with :func:`dataclasses.replace`); None when not adjusted.
    """

    difference: float
    low: float
    high: float
    p_value: float
    units: int
    seeds_a: int
    seeds_b: int
    samples: int
    conditional: bool
    df: float | None
    scheme: str
    adjusted_p: float | None = None

    @property
    def significant(self) -> bool:
        """Whether the difference is claimed: the (Holm-adjusted when set) p-value is below
        :data:`ALPHA` and the test is not :attr:`conditional`. A conditional test (one seed on
        a side, or the pooled scheme) says whether *these* trained models differ, not whether
        training them does: its p-value is shown, marked conditional, never as significant."""
        p = self.adjusted_p if self.adjusted_p is not None else self.p_value
        return p < ALPHA and not self.conditional

    @property
    def seeds(self) -> int:
        """The smaller seed count of the two systems (the field before unequal counts)."""
        return min(self.seeds_a, self.seeds_b)


def read_units(text: str, source: str = "") -> tuple[tuple[str, ...], np.ndarray]:
    """Unit ids and the ``(units, k)`` statistics of a stored ``units-<split>.json``.

    Args:
        text: the file's text, ``{"ids": [...], "rows": [[...], ...]}``.
        source: what the text is (a file name, a run id), named in errors.

    Raises:
        ValueError: bad JSON, missing keys, ids that are not unique strings, rows that are not
            one row of k ≥ 1 numbers per id, or non-finite statistics.
    """
    where = f"unit statistics ({source})" if source else "unit statistics"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e})") from e
    if not isinstance(data, dict) or "ids" not in data or "rows" not in data:
        raise ValueError(f'{where}: expected an object with "ids" and "rows"')
    ids, raw = data["ids"], data["rows"]
    if not isinstance(ids, list) or not all(isinstance(u, str) for u in ids):
        raise ValueError(f"{where}: ids must be a list of strings")
    if not ids:
        raise ValueError(f"{where}: no units")
    repeated = [u for u, n in Counter(ids).items() if n > 1]
    if repeated:
        shown = ", ".join(repr(u) for u in repeated[:3])
        raise ValueError(f"{where}: {len(repeated)} duplicate unit ids, e.g. {shown}")
    try:
        rows = np.asarray(raw, dtype=np.float64)  # (units, k)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: rows must be lists of numbers of equal length ({e})") from e
    if rows.ndim != 2 or rows.shape[0] != len(ids) or rows.shape[1] == 0:
        raise ValueError(f"{where}: {len(ids)} ids, rows of shape {rows.shape}")
    bad = np.flatnonzero(~np.isfinite(rows).all(axis=1))  # (bad units,)
    if bad.size:
        shown = ", ".join(repr(ids[i]) for i in bad[:3])
        raise ValueError(f"{where}: non-finite statistics for {bad.size} units, e.g. {shown}")
    return tuple(ids), rows


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (Holm 1979), in the input order.

    The i-th smallest of m p-values becomes ``max_{j ≤ i} min(1, (m − j + 1) p_(j))``: monotone
    in the raw p-values and capped at 1. Rejecting where the adjusted value is below α controls
    the family-wise error rate at α.

    Raises:
        ValueError: a p-value outside [0, 1] (or NaN).
    """
    ps = [float(p) for p in p_values]
    if not all(0.0 <= p <= 1.0 for p in ps):
        raise ValueError(f"p-values must lie in [0, 1], got {ps}")
    m = len(ps)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=ps.__getitem__)):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


# --- Student's t: two-sided tail and quantile (no scipy dependency) -------------------------

_NORMAL = NormalDist()
_T_AS_NORMAL = 1e7  # above this many df the t and normal tails agree to ~1e-7 relative


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; converges for
    ``x < (a + 1) / (a + b + 2)``)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        for aa in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            return h
    raise ArithmeticError(f"incomplete beta did not converge (a={a}, b={b}, x={x})")


def _log_gamma_ratio(a: float, b: float) -> float:
    """``ln Γ(a + b) − ln Γ(a)`` without the cancellation of two large ``lgamma`` values."""
    if a < 100.0:
        return math.lgamma(a + b) - math.lgamma(a)
    # Stirling's series, ln Γ(z) = (z − ½) ln z − z + ½ ln 2π + 1/(12z) − 1/(360z³) + O(z⁻⁵),
    # differenced term by term (the log terms through log1p).
    c = a + b
    return (
        (a - 0.5) * math.log1p(b / a)
        + b * math.log(c)
        - b
        + (1.0 / c - 1.0 / a) / 12.0
        - (1.0 / c**3 - 1.0 / a**3) / 360.0
    )


def _betainc(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """Regularized incomplete beta function ``I_x(a, b)``, given ``y = 1 − x`` and both logs
    computed accurately by the caller."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_beta = math.lgamma(b) - _log_gamma_ratio(a, b)  # ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a+b)
    front = math.exp(a * log_x + b * log_y - log_beta)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def t_two_sided(t: float, df: float | None) -> float:
    """``P(|T| ≥ |t|)`` for Student's t with ``df`` degrees of freedom (None: normal).

    Uses ``P(|T| ≥ t) = I_{df / (df + t²)}(df / 2, 1 / 2)``; relative accuracy about 1e-9.
    """
    if df is None or df > _T_AS_NORMAL:
        return math.erfc(abs(t) / math.sqrt(2.0))
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    if t == 0.0:
        return 1.0
    t2 = t * t
    x, y = df / (df + t2), t2 / (df + t2)
    log_x, log_y = -math.log1p(t2 / df), -math.log1p(df / t2)
    return _betainc(df / 2.0, 0.5, x, y, log_x, log_y)


def t_quantile(q: float, df: float | None) -> float:
    """The ``q`` quantile (``0.5 ≤ q < 1``) of Student's t with ``df`` degrees of freedom
    (None: normal).

    Newton's method on the two-sided tail from the normal quantile, which lies below the t
    quantile; the tail is convex for t > 0, so the iterates increase monotonically to the root.
    """
    if not 0.5 <= q < 1.0:
        raise ValueError(f"quantile level must lie in [0.5, 1), got {q}")
    z = _NORMAL.inv_cdf(q)
    if df is None or df > _T_AS_NORMAL or q == 0.5:
        return z
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    target = 2.0 * (1.0 - q)
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    t = z
    for _ in range(200):
        density = math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))
        step = (t_two_sided(t, df) - target) / (2.0 * density)
        t += step
        if step < 1e-13 * t:
            return t
    raise ArithmeticError(f"t quantile did not converge (q={q}, df={df})")


# --- resampling -------------------------------------------------------------------------


def _aligned(a: Sequence[Run], b: Sequence[Run]) -> tuple[np.ndarray, np.ndarray]:
    """``(seeds_a, units, k)`` and ``(seeds_b, units, k)`` statistics, rows ordered by the
    first run's unit ids.

    Raises:
        ValueError: no runs on a side, duplicate ids, runs on different unit sets, shapes that
            do not match, non-finite statistics.
    """
    if not a or not b:
        raise ValueError(f"need at least one run on each side, got {len(a)} and {len(b)}")
    ids = tuple(a[0][0])
    order = {u: i for i, u in enumerate(ids)}
    if not ids:
        raise ValueError("no units")
    if len(order) != len(ids):
        raise ValueError("system A, run 1: duplicate unit ids")
    width = np.asarray(a[0][1]).shape[-1]
    out = []
    for side, runs in (("A", a), ("B", b)):
        per_seed = []
        for j, (run_ids, raw) in enumerate(runs):
            name = f"system {side}, run {j + 1} of {len(runs)}"
            run_ids = tuple(run_ids)
            rows = np.asarray(raw, dtype=np.float64)  # (units, k)
            if rows.ndim != 2 or rows.shape != (len(run_ids), width):
                raise ValueError(f"{name}: {len(run_ids)} ids, rows of shape {rows.shape}")
            if not np.isfinite(rows).all():
                raise ValueError(f"{name}: non-finite unit statistics")
            if run_ids != ids:  # else the usual case: already in the first run's order
                rows = _reordered(run_ids, rows, order, name)
            per_seed.append(rows)
        out.append(np.stack(per_seed))  # (seeds, units, k)
    return out[0], out[1]


def _reordered(
    run_ids: tuple[str, ...], rows: np.ndarray, order: Mapping[str, int], name: str
) -> np.ndarray:
    """A run's ``(units, k)`` rows in the first run's order (``order``: id → position)."""
    if len(set(run_ids)) != len(run_ids):
        raise ValueError(f"{name}: duplicate unit ids")
    extra = [u for u in run_ids if u not in order]
    if extra or len(run_ids) != len(order):
        shown = f"; not in A's first run: {', '.join(map(repr, extra[:3]))}" if extra else ""
        raise ValueError(
            f"the two systems were scored on different units: {name} has {len(run_ids)} "
            f"units, the first run of A {len(order)}{shown}"
        )
    index = np.fromiter((order[u] for u in run_ids), dtype=np.intp, count=len(run_ids))
    aligned = np.empty_like(rows)  # (units, k)
    aligned[index] = rows
    return aligned


def _metrics(totals: np.ndarray, metric_from_totals: Metric, what: str) -> np.ndarray:
    """The metric of each row of ``(m, k)`` column sums, as ``(m,)``; finite or ValueError.

    ``metric_from_totals`` gets the ``k`` columns as ``(m,)`` arrays in one call where it takes
    them (:attr:`tasks.core.TaskSpec.metric_from_totals`: every task's metric does, and gives the
    values it gives row by row); a metric written for floats alone (it raises on arrays, or does
    not return ``(m,)`` values) is called once per row instead.
    """
    values = _column_metrics(totals, metric_from_totals)
    if values is None:
        values = np.fromiter(
            (metric_from_totals(row) for row in totals.tolist()),
            dtype=np.float64,
            count=len(totals),
        )  # (m,)
    bad = ~np.isfinite(values)
    if bad.any():
        raise ValueError(
            f"the metric is not finite on {int(bad.sum())} of {len(values)} {what} (e.g. a "
            "resample with nothing to count and a metric without a 0/0 guard); no test reported"
        )
    return values


def _column_metrics(totals: np.ndarray, metric_from_totals: Metric) -> np.ndarray | None:
    """``metric_from_totals`` on the ``k`` columns of ``(m, k)`` totals as ``(m,)`` arrays, or
    ``None`` where the metric does not take arrays (a float-only metric's ``if`` on an array
    raises ``ValueError``; arithmetic with a non-array raises ``TypeError``)."""
    with np.errstate(all="ignore"):  # a float-only metric's 0/0 is caught per row instead
        try:
            values = metric_from_totals(list(totals.T))
        except (TypeError, ValueError):
            return None
    if not isinstance(values, np.ndarray) or values.shape != (len(totals),):
        return None
    return values.astype(np.float64, copy=False)  # (m,)


def _draw_counts(n_units: int, samples: int, seed: int) -> list[np.ndarray]:
    """How often each unit is drawn, ``(chunk, units)`` float64 blocks over ``samples``
    bootstrap samples of ``n_units`` draws with replacement each."""
    rng = np.random.default_rng(seed)
    chunk = max(1, min(samples, _CHUNK_ELEMENTS // n_units))
    blocks = []
    for start in range(0, samples, chunk):
        m = min(chunk, samples - start)
        draws = rng.integers(0, n_units, (m, n_units))  # (m, units)
        draws += np.arange(m)[:, None] * n_units  # a separate bin range per sample
        counts = np.bincount(draws.ravel(), minlength=m * n_units)  # (m · units,)
        blocks.append(counts.reshape(m, n_units).astype(np.float64))  # (m, units)
    return blocks


_COUNT_CACHE: OrderedDict[tuple[int, int, int], tuple[np.ndarray, ...]] = OrderedDict()


def _counts(n_units: int, samples: int, seed: int) -> Sequence[np.ndarray]:
    """:func:`_draw_counts`, kept between calls (a table tests every cell and epoch on the same
    units) while the kept matrices hold at most ``_CACHE_ELEMENTS`` counts in all, the least
    recently used dropped first; larger ones are drawn for each call."""
    key = (n_units, samples, seed)
    size = n_units * samples
    if size > _CACHE_ELEMENTS:
        return _draw_counts(n_units, samples, seed)
    if key in _COUNT_CACHE:
        _COUNT_CACHE.move_to_end(key)
        return _COUNT_CACHE[key]
    blocks = tuple(_draw_counts(n_units, samples, seed))
    for block in blocks:
        block.setflags(write=False)
    while _COUNT_CACHE and size + sum(k[0] * k[1] for k in _COUNT_CACHE) > _CACHE_ELEMENTS:
        _COUNT_CACHE.popitem(last=False)
    _COUNT_CACHE[key] = blocks
    return blocks


@dataclass(frozen=True)
class _Resampled:
    """Per-run metrics on the full unit set and on every bootstrap sample.

    Attributes:
        observed_a: ``(seeds_a,)`` metric of each run of A on all units.
        observed_b: ``(seeds_b,)``.
        boot_a: ``(samples, seeds_a)`` metric of each run of A on each bootstrap sample.
        boot_b: ``(samples, seeds_b)``.
        units: units per sample.
    """

    observed_a: np.ndarray
    observed_b: np.ndarray
    boot_a: np.ndarray
    boot_b: np.ndarray
    units: int


def _resample(
    a: Sequence[Run],
    b: Sequence[Run],
    metric_from_totals: Metric,
    samples: int,
    seed: int,
) -> _Resampled:
    """The paired bootstrap shared by both schemes: every sample draws the units once and
    applies the draw to every run of both systems."""
    if samples < 2:
        raise ValueError(f"need at least 2 bootstrap samples, got {samples}")
    stats_a, stats_b = _aligned(a, b)  # (seeds_a, units, k), (seeds_b, units, k)
    n_a, n_units, k = stats_a.shape
    runs = n_a + len(stats_b)
    stats = np.concatenate([stats_a, stats_b])  # (runs, units, k)
    observed = _metrics(stats.sum(axis=1), metric_from_totals, "runs")  # (runs,)
    flat = np.ascontiguousarray(
        stats.transpose(1, 0, 2).reshape(n_units, runs * k)
    )  # (units, runs·k)
    boot = np.empty((samples, runs))  # (samples, runs)
    start = 0
    for counts in _counts(n_units, samples, seed):  # (m, units)
        m = len(counts)
        totals = (counts @ flat).reshape(m * runs, k)  # (m · runs, k)
        boot[start : start + m] = _metrics(
            totals, metric_from_totals, "bootstrap samples × runs"
        ).reshape(m, runs)
        start += m
    return _Resampled(observed[:n_a], observed[n_a:], boot[:, :n_a], boot[:, n_a:], n_units)


def _two_sided(difference: float, se: float, df: float | None) -> float:
    if se == 0.0:
        return 1.0 if difference == 0.0 else 0.0
    return min(1.0, t_two_sided(difference / se, df))


def _off_diagonal_mean(cov: np.ndarray) -> float:
    """Mean of the off-diagonal entries of a square ``(n, n)`` matrix (n ≥ 2)."""
    n = len(cov)
    return float((cov.sum() - np.trace(cov)) / (n * (n - 1)))


def _seed_aware(r: _Resampled, samples: int, interaction_once: bool = True) -> Comparison:
    """The seed-aware test from a resampling (module docstring).

    Args:
        r: the resampling.
        samples: bootstrap samples in it.
        interaction_once: leave same-run covariances out of the unit term (the scheme of this
            module); False adds the full bootstrap variance of the seed-mean difference to the
            seed terms, which counts the seed × unit interaction twice (conservative; only the
            calibration benchmark uses it, for comparison).
    """
    n_a, n_b = len(r.observed_a), len(r.observed_b)
    difference = float(r.observed_a.mean() - r.observed_b.mean())
    diffs = r.boot_a.mean(axis=1) - r.boot_b.mean(axis=1)  # (samples,)
    conditional = n_a < 2 or n_b < 2
    seed_terms: list[tuple[float, int]] = []
    if conditional:
        unit_var = float(np.var(diffs, ddof=1))
    else:
        if interaction_once:
            cov = np.cov(np.concatenate([r.boot_a, r.boot_b], axis=1), rowvar=False)  # (runs, runs)
            unit_var = (
                _off_diagonal_mean(cov[:n_a, :n_a])
                + _off_diagonal_mean(cov[n_a:, n_a:])
                - 2.0 * float(cov[:n_a, n_a:].mean())
            )
            unit_var = max(unit_var, 0.0)
        else:
            unit_var = float(np.var(diffs, ddof=1))
        for observed in (r.observed_a, r.observed_b):
            seed_terms.append((float(np.var(observed, ddof=1)) / len(observed), len(observed) - 1))
    variance = unit_var + sum(v for v, _ in seed_terms)
    if not math.isfinite(variance):
        raise ValueError("the variance of the difference is not finite; no test reported")
    denominator = sum(v * v / dof for v, dof in seed_terms)
    df = variance * variance / denominator if denominator > 0.0 else None
    se = math.sqrt(variance)
    half = t_quantile(1.0 - ALPHA / 2, df) * se
    return Comparison(
        difference=difference,
        low=difference - half,
        high=difference + half,
        p_value=_two_sided(difference, se, df),
        units=r.units,
        seeds_a=n_a,
        seeds_b=n_b,
        samples=samples,
        conditional=conditional,
        df=df,
        scheme="seed-aware",
    )


def _pooled(r: _Resampled, samples: int) -> Comparison:
    """The pooled test from a resampling: percentile interval and sign-test p-value."""
    difference = float(r.observed_a.mean() - r.observed_b.mean())
    diffs = r.boot_a.mean(axis=1) - r.boot_b.mean(axis=1)  # (samples,)
    low, high = np.percentile(diffs, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    below, above = np.mean(diffs <= 0), np.mean(diffs >= 0)
    p = min(1.0, max(2 * min(below, above), 1 / (samples + 1)))
    return Comparison(
        difference=difference,
        low=float(low),
        high=float(high),
        p_value=float(p),
        units=r.units,
        seeds_a=len(r.observed_a),
        seeds_b=len(r.observed_b),
        samples=samples,
        conditional=True,
        df=None,
        scheme="pooled",
    )


def seed_aware_test(
    a: Sequence[Run],
    b: Sequence[Run],
    metric_from_totals: Metric,
    samples: int = SAMPLES,
    seed: int = 0,
) -> Comparison:
    """Seed-aware test of ``metric(A) − metric(B)`` (seed means) over shared units.

    Args:
        a: system A's runs, one ``(unit ids, (units, k) statistics)`` per seed.
        b: system B's runs on the same units; the seed count may differ from A's.
        metric_from_totals: the metric from column sums of statistics.
        samples: bootstrap samples of the unit term.
        seed: of the resampling (fixed: the same result every call).

    Returns:
        The comparison; ``conditional`` (unit bootstrap alone, normal reference) when a side
        has a single run.

    Raises:
        ValueError: no runs on a side, different units, bad statistics, a non-finite metric.
    """
    return _seed_aware(_resample(a, b, metric_from_totals, samples, seed), samples)


def pooled_bootstrap(
    a: Sequence[Run],
    b: Sequence[Run],
    metric_from_totals: Metric,
    samples: int = SAMPLES,
    seed: int = 0,
) -> Comparison:
    """Paired bootstrap of ``metric(A) − metric(B)`` over shared units, seeds pooled (held fixed):
    the scheme before the seed-aware test, conditional on the seeds (module docstring).

    Args:
        a: system A's runs, one ``(unit ids, (units, k) statistics)`` per seed.
        b: system B's runs on the same units, the same number of seeds.
        metric_from_totals: the metric from column sums of statistics.
        samples: bootstrap samples.
        seed: of the resampling.

    Raises:
        ValueError: no runs, different seed counts, different units, a non-finite metric.
    """
    if not a or not b or len(a) != len(b):
        raise ValueError(f"need the same seeds on both sides, got {len(a)} and {len(b)} runs")
    return _pooled(_resample(a, b, metric_from_totals, samples, seed), samples)


def compare_runs(
    a: Sequence[Mapping[str, str]],
    b: Sequence[Mapping[str, str]],
    split: str,
    metric_from_totals: Metric,
    samples: int = SAMPLES,
) -> Comparison | None:
    """:func:`seed_aware_test` from stored attachments (name → text) of each seed's run;
    ``None`` when a run lacks ``units-<split>.json`` (older runs, tasks without unit stats).

    The two sides may have different numbers of runs (each cell's mean uses the runs found).
    """
    name = f"units-{split}.json"
    if not a or not b or any(name not in run for run in [*a, *b]):
        return None
    return seed_aware_test(
        [read_units(run[name], f"{name}, system A run {i + 1}") for i, run in enumerate(a)],
        [read_units(run[name], f"{name}, system B run {i + 1}") for i, run in enumerate(b)],
        metric_from_totals,
        samples,
    )
