"""PNG figures from stored runs: learned layer weights (cf. Figure 2 of Peters et al., 2018, §5.5)
and learning curves.

Both read the runs' log lines (conventions in :mod:`experiments.store`): ``layer_weights`` (the
softmax-normalised weights ``s`` of each site's scalar mix, Eq. (1)) from the last line that has
them, and ``epoch`` / ``dev_<metric>`` pairs. The data are computed by pure functions
(:func:`layer_weights`, :func:`learning_curves`); matplotlib is imported only to draw, through
its object API (``Figure.savefig`` renders PNGs with the Agg canvas; no pyplot, no global backend
switch, so it is safe in servers, threads and Ray workers).
"""

from __future__ import annotations

import importlib
import os
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.store import RunRecord

LOG_KEY = "layer_weights"


@dataclass(frozen=True)
class SiteWeights:
    """Layer weights of one injection site, over runs.

    Attributes:
        mean: mean ``s_j`` per layer ``j``.
        std: sample standard deviation per layer (0 for a single run).
        n: runs averaged.
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]
    n: int


@dataclass(frozen=True)
class Curve:
    """One run's learning curve.

    Attributes:
        label: legend text.
        x: epochs (or steps).
        y: metric values, scaled.
    """

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


def final_layer_weights(record: RunRecord) -> dict[str, list[float]]:
    """The ``layer_weights`` of the run's last log line that has them (empty when none)."""
    for line in reversed(record.log):
        weights = line.get(LOG_KEY)
        if isinstance(weights, Mapping) and weights:
            return {str(site): [float(v) for v in values] for site, values in weights.items()}
    return {}


def layer_weights(records: Iterable[RunRecord]) -> dict[str, SiteWeights]:
    """Final layer weights per site, averaged over ``records`` (e.g. the seeds of one config).

    Raises:
        ValueError: runs disagree on a site's number of layers.
    """
    per_site: dict[str, list[list[float]]] = {}
    for record in records:
        for site, values in final_layer_weights(record).items():
            per_site.setdefault(site, []).append(values)
    result = {}
    for site in sorted(per_site):
        runs = per_site[site]
        sizes = sorted({len(values) for values in runs})
        if len(sizes) != 1:
            raise ValueError(f"site {site!r}: runs have different numbers of layers {sizes}")
        columns = list(zip(*runs, strict=True))
        result[site] = SiteWeights(
            mean=tuple(statistics.fmean(c) for c in columns),
            std=tuple(statistics.stdev(c) if len(c) > 1 else 0.0 for c in columns),
            n=len(runs),
        )
    return result


def learning_curves(
    records: Iterable[RunRecord], metric: str, x: str = "epoch", scale: float = 1.0
) -> list[Curve]:
    """One curve per run that logged both ``x`` and ``metric`` (e.g. ``"dev_f1"``).

    Args:
        records: the runs.
        metric: log key of the y values (natural units).
        x: log key of the x values.
        scale: y multiplier (100 for percentages).
    """
    curves = []
    for record in records:
        points = [
            (float(line[x]), float(line[metric]) * scale)
            for line in record.log
            if _is_number(line.get(x)) and _is_number(line.get(metric))
        ]
        if points:
            xs, ys = zip(*points, strict=True)
            curves.append(Curve(label=describe(record), x=tuple(xs), y=tuple(ys)))
    return curves


def describe(record: RunRecord) -> str:
    """A short legend label, e.g. ``"snli elmo all λ=0.001 input+output s0 (3f9c2a1b7e04)"``."""
    spec = record.spec
    parts = [spec.task, spec.representation]
    if spec.sites:
        parts.append("LastOnly" if spec.mix.mode == "last" else f"all λ={spec.mix.lam:g}")
        parts.append("+".join(spec.sites))
    parts.append(f"s{spec.seed}")
    return f"{' '.join(parts)} ({record.run_id})"


def plot_layer_weights(
    records: Iterable[RunRecord], path: str | os.PathLike[str], title: str | None = None
) -> Path:
    """Bars of ``softmax(w)`` per biLM layer, one panel per site, mean ± std over the runs.

    Returns:
        The PNG path.

    Raises:
        ValueError: no run logged layer weights.
        ImportError: matplotlib is not installed.
    """
    weights = layer_weights(records)
    if not weights:
        raise ValueError(f"no run has {LOG_KEY!r} in its log")
    figure_class = _figure_class()
    figure = figure_class(figsize=(3.2 * len(weights), 3.0), layout="constrained")
    axes = figure.subplots(1, len(weights), squeeze=False)[0]
    for ax, (site, stats) in zip(axes, weights.items(), strict=True):
        layers = list(range(len(stats.mean)))
        ax.bar(layers, stats.mean, yerr=stats.std, capsize=4, color="tab:blue")
        ax.set_xticks(layers, [f"layer {j}" for j in layers])
        ax.set_ylim(0.0, 1.0)
        ax.set_ylabel("softmax(w)")
        ax.set_title(f"{site} (n={stats.n})")
    if title:
        figure.suptitle(title)
    return _save(figure, path)


def plot_learning_curves(
    records: Iterable[RunRecord],
    path: str | os.PathLike[str],
    metric: str,
    x: str = "epoch",
    scale: float = 1.0,
    title: str | None = None,
) -> Path:
    """``metric`` against ``x`` (see :func:`learning_curves`), one line per run.

    Returns:
        The PNG path.

    Raises:
        ValueError: no run logged both keys.
        ImportError: matplotlib is not installed.
    """
    curves = learning_curves(records, metric, x, scale)
    if not curves:
        raise ValueError(f"no run logged both {x!r} and {metric!r}")
    figure = _figure_class()(figsize=(6.4, 4.0), layout="constrained")
    ax = figure.subplots()
    for curve in curves:
        ax.plot(curve.x, curve.y, marker="o", markersize=3, label=curve.label)
    ax.set_xlabel(x)
    ax.set_ylabel(metric if scale == 1 else f"{metric} × {scale:g}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small")
    if title:
        ax.set_title(title)
    return _save(figure, path)


def _figure_class() -> Any:
    try:
        module = importlib.import_module("matplotlib.figure")
    except ImportError as error:
        raise ImportError(
            "plots need matplotlib: pip install matplotlib (or the project's 'plots' extra)"
        ) from error
    return module.Figure


def _save(figure: Any, path: str | os.PathLike[str]) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, format="png", dpi=100)
    return out


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
