"""Paired bootstrap tests between two systems scored on the same units (Koehn 2004;
Berg-Kirkpatrick et al. 2012), from the per-unit statistics every run stores.

A run stores ``units-<split>.json`` (:class:`tasks.core.UnitStatistics`): one row of a metric's
sufficient statistics per resampling unit (a question, a pair, a sentence, a document). The
metric of any sample of units is ``metric_from_totals(column sums)``, so resampling costs one
matrix product per bootstrap sample whatever the metric (accuracy, span F1, CoNLL F1).

**Seeds are pooled** as follows: both systems must have runs for the same seeds; a bootstrap
sample draws unit indices once (with replacement) and applies them to every seed, and each
system's metric on the sample is the mean over its seeds of the metric on those units. The
observed difference is therefore the difference of the seed means (what the table shows), and
the interval reflects the variation over test examples of that mean difference. Seed variance
itself is shown separately (mean ± std over seeds).

The p-value is two-sided: twice the smaller share of bootstrap differences on either side of
0 (the percentile interval's sign test), with ``1 / (samples + 1)`` as the smallest value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
SAMPLES = 1000  # bootstrap samples; source: Koehn (2004) uses 1,000


@dataclass(frozen=True)
class Comparison:
    """System A minus system B on one split (natural units).

    Attributes:
        difference: observed difference of the seed-mean metrics.
        low: lower end of the 95 % percentile interval of the difference.
        high: upper end.
        p_value: two-sided paired bootstrap p-value for "no difference".
        units: resampled units per sample.
        seeds: seeds pooled.
        samples: bootstrap samples.
    """

    difference: float
    low: float
    high: float
    p_value: float
    units: int
    seeds: int
    samples: int

    @property
    def significant(self) -> bool:
        """Whether ``p_value < 0.05``."""
        return self.p_value < ALPHA


def read_units(text: str) -> tuple[tuple[str, ...], np.ndarray]:
    """Unit ids and the ``(units, k)`` statistics of a stored ``units-<split>.json``."""
    data = json.loads(text)
    rows = np.asarray(data["rows"], dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(data["ids"]):
        raise ValueError(f"unit statistics: {len(data['ids'])} ids, rows of shape {rows.shape}")
    return tuple(data["ids"]), rows


def _aligned(
    systems: Sequence[Sequence[tuple[tuple[str, ...], np.ndarray]]],
) -> np.ndarray:
    """``(systems, seeds, units, k)`` statistics, rows ordered by the first run's unit ids."""
    ids = systems[0][0][0]
    order = {u: i for i, u in enumerate(ids)}
    out = []
    for runs in systems:
        per_seed = []
        for run_ids, rows in runs:
            if set(run_ids) != set(order):
                raise ValueError("the two systems were scored on different units")
            index = np.array([order[u] for u in run_ids])
            aligned = np.empty_like(rows)
            aligned[index] = rows
            per_seed.append(aligned)
        out.append(np.stack(per_seed))
    return np.stack(out)


def paired_bootstrap(
    a: Sequence[tuple[tuple[str, ...], np.ndarray]],
    b: Sequence[tuple[tuple[str, ...], np.ndarray]],
    metric_from_totals: Callable[[Sequence[float]], float],
    samples: int = SAMPLES,
    seed: int = 0,
) -> Comparison:
    """Paired bootstrap of ``metric(A) − metric(B)`` over shared units, seeds pooled.

    Args:
        a: system A's runs, one ``(unit ids, (units, k) statistics)`` per seed.
        b: system B's runs on the same units, the same number of seeds.
        metric_from_totals: the metric from column sums of statistics.
        samples: bootstrap samples.
        seed: of the resampling (fixed: a table renders the same p-values every time).

    Raises:
        ValueError: no runs, different seed counts, or different units.
    """
    if not a or not b or len(a) != len(b):
        raise ValueError(f"need the same seeds on both sides, got {len(a)} and {len(b)} runs")
    stats = _aligned([a, b])  # (2, seeds, units, k)
    n_units = stats.shape[2]

    def seed_mean(totals: np.ndarray) -> float:  # totals (seeds, k)
        return float(np.mean([metric_from_totals(list(t)) for t in totals]))

    observed = seed_mean(stats[0].sum(axis=1)) - seed_mean(stats[1].sum(axis=1))
    rng = np.random.default_rng(seed)
    diffs = np.empty(samples)
    for i in range(samples):
        counts = np.bincount(rng.integers(0, n_units, n_units), minlength=n_units)  # (units,)
        totals = np.einsum("u,zsuk->zsk", counts, stats)  # (2, seeds, k)
        diffs[i] = seed_mean(totals[0]) - seed_mean(totals[1])
    low, high = np.percentile(diffs, [100 * ALPHA / 2, 100 * (1 - ALPHA / 2)])
    below, above = np.mean(diffs <= 0), np.mean(diffs >= 0)
    p = min(1.0, max(2 * min(below, above), 1 / (samples + 1)))
    return Comparison(observed, float(low), float(high), float(p), n_units, len(a), samples)


def compare_runs(
    a: Sequence[Mapping[str, str]],
    b: Sequence[Mapping[str, str]],
    split: str,
    metric_from_totals: Callable[[Sequence[float]], float],
    samples: int = SAMPLES,
) -> Comparison | None:
    """:func:`paired_bootstrap` from stored attachments (name → text) of each seed's run;
    ``None`` when a run lacks ``units-<split>.json`` (older runs, tasks without unit stats)."""
    name = f"units-{split}.json"
    if not a or not b or any(name not in run for run in [*a, *b]):
        return None
    return paired_bootstrap(
        [read_units(run[name]) for run in a],
        [read_units(run[name]) for run in b],
        metric_from_totals,
        samples,
    )
