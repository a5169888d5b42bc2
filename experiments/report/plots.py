"""PNG figures from stored runs: learned layer weights (cf. Figure 2 of Peters et al., 2018, §5.5),
learning curves and sample-efficiency curves (Figure 1, §5.4).

Both read the runs' log lines (conventions in :mod:`experiments.run.store`): ``layer_weights`` (the
softmax-normalised weights ``s`` of each site's scalar mix, Eq. (1)) from the last line that has
them (for ``mode="dynamic"`` runs the mean per-token weights over dev's real tokens, with their
per-token standard deviation under ``layer_weights_std``), and ``epoch`` / ``dev_<metric>``
pairs; sample-efficiency curves read the final metrics of runs trained on a share of the
training set (``RunSpec.train_fraction``). The data are computed
by pure functions (:func:`layer_weights`, :func:`learning_curves`,
:func:`sample_efficiency_curves`); matplotlib is imported only to draw, through
its object API (``Figure.savefig`` renders PNGs with the Agg canvas; no pyplot, no global backend
switch, so it is safe in servers, threads and Ray workers).

The figures written beside rendered tables (``python -m experiments``: ``plots/`` next to
``tables/``) are :func:`table_plots` and :func:`efficiency_plots`.
"""

from __future__ import annotations

import importlib
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from experiments.data.real_sets import SHARED_PREFIX
from experiments.run.spec import NO_REPRESENTATION, RunSpec, derive
from experiments.run.store import RunRecord
from tasks.representations import representation_label

if TYPE_CHECKING:
    from experiments.report.render import TableSpec

LOG_KEY = "layer_weights"
#: Per-token spread of a dynamic mix's weights (``{site: [std_0, …, std_L]}``), same log line.
STD_KEY = "layer_weights_std"
BASELINE_LABEL = "Baseline"
#: Figure 1's x range: 0.1 % to 100 % of the training set.
FRACTION_RANGE = (0.1, 100.0)


@dataclass(frozen=True)
class SiteWeights:
    """Layer weights of one injection site, over runs.

    Attributes:
        mean: mean ``s_j`` per layer ``j``.
        std: sample standard deviation per layer (0 for a single run).
        n: runs averaged.
        token_std: for dynamic mixes, the standard deviation of the per-token weights over the
            runs' dev tokens together (``sqrt(mean_r σ_r² + var_r μ_r)``, runs weighted
            equally); ``None`` when any run has no per-token spread (static mixes).
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]
    n: int
    token_std: tuple[float, ...] | None = None


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


@dataclass(frozen=True)
class Band:
    """One series of a learning-curve panel: the mean over its runs at each x, and the runs'
    range there (the seeds' band).

    Attributes:
        label: legend text, in words (``"ELMo"``, ``"Baseline"``, a table's column).
        x: epochs (or steps) that any run of the series logged.
        mean: mean over the runs that logged each x, scaled.
        low: smallest run value at each x. high: largest.
        n: runs of the series.
    """

    label: str
    x: tuple[float, ...]
    mean: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    n: int


@dataclass(frozen=True)
class Panel:
    """One axis of a learning-curve figure: one task on one data set.

    Attributes:
        title: names the task, the data, the split and the metric.
        bands: its series.
        ylabel: the y axis (split and metric).
    """

    title: str
    bands: tuple[Band, ...]
    ylabel: str


class EfficiencyPoint(NamedTuple):
    """One point of a sample-efficiency curve: a training-set share, over seeds.

    Attributes:
        train_fraction: share of the training examples (1.0 = all).
        mean: mean metric over the runs, scaled.
        std: sample standard deviation (n − 1; 0 for a single run).
        n: runs averaged.
    """

    train_fraction: float
    mean: float
    std: float
    n: int


def final_layer_weights(record: RunRecord) -> dict[str, list[float]]:
    """The ``layer_weights`` of the run's last log line that has them (empty when none)."""
    return _final(record)[0]


def final_layer_weights_std(record: RunRecord) -> dict[str, list[float]]:
    """The per-token spread (``layer_weights_std``) logged with :func:`final_layer_weights`
    (empty for static mixes and runs logged before dynamic mixes existed)."""
    return _final(record)[1]


def _final(record: RunRecord) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    for line in reversed(record.log):
        weights = line.get(LOG_KEY)
        if isinstance(weights, Mapping) and weights:
            spread = line.get(STD_KEY)
            return _per_site(weights), _per_site(spread if isinstance(spread, Mapping) else {})
    return {}, {}


def _per_site(values: Mapping[str, Any]) -> dict[str, list[float]]:
    return {str(site): [float(v) for v in row] for site, row in values.items()}


def layer_weights(records: Iterable[RunRecord]) -> dict[str, SiteWeights]:
    """Final layer weights per site, averaged over ``records`` (e.g. the seeds of one config).

    Raises:
        ValueError: runs disagree on a site's number of layers.
    """
    per_site: dict[str, list[list[float]]] = {}
    spreads: dict[str, list[list[float] | None]] = {}
    for record in records:
        weights, spread = _final(record)
        for site, values in weights.items():
            per_site.setdefault(site, []).append(values)
            spreads.setdefault(site, []).append(spread.get(site))
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
            token_std=_pooled_token_std(runs, spreads[site]),
        )
    return result


def _pooled_token_std(
    means: Sequence[Sequence[float]], stds: Sequence[Sequence[float] | None]
) -> tuple[float, ...] | None:
    """Per layer, the spread of the per-token weights of all runs together (runs weighted
    equally): ``sqrt(mean_r σ_r² + pvariance_r μ_r)``; ``None`` unless every run has one."""
    if not stds or any(s is None or len(s) != len(m) for s, m in zip(stds, means, strict=True)):
        return None
    known = [list(s) for s in stds if s is not None]
    return tuple(
        (statistics.fmean(s[j] ** 2 for s in known) + statistics.pvariance([m[j] for m in means]))
        ** 0.5
        for j in range(len(means[0]))
    )


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
    return [c for c in _curves(records, metric, x, scale) if c is not None]


def _curves(records: Iterable[RunRecord], metric: str, x: str, scale: float) -> list[Curve | None]:
    """Per record, its curve (``None`` when it logged no point of both keys)."""
    curves: list[Curve | None] = []
    for record in records:
        points = [
            (float(line[x]), float(line[metric]) * scale)
            for line in record.log
            if _is_number(line.get(x)) and _is_number(line.get(metric))
        ]
        xs, ys = zip(*points, strict=True) if points else ((), ())
        curves.append(Curve(describe(record), tuple(xs), tuple(ys)) if points else None)
    return curves


def learning_bands(
    records: Iterable[RunRecord],
    metric: str,
    labels: Mapping[str, str] | None = None,
    x: str = "epoch",
    scale: float = 1.0,
) -> list[Band]:
    """One band per series: the runs that share a label (``labels[run_id]``, else
    :func:`series_label` of the spec), averaged at each ``x`` over the runs that logged it,
    with their range; series in the order of ``labels``' values, then of their first run.

    Args:
        records: the runs.
        metric: log key of the y values (natural units).
        labels: run id → legend text (e.g. a table's column labels).
        x: log key of the x values.
        scale: y multiplier (100 for percentages).
    """
    records = list(records)
    series: dict[str, list[Curve]] = {}
    for record, curve in zip(records, _curves(records, metric, x, scale), strict=True):
        if curve is not None:
            label = (labels or {}).get(record.run_id) or series_label(record.spec)
            series.setdefault(label, []).append(curve)
    order = list(dict.fromkeys((labels or {}).values()))  # the caller's order (a table's)
    ranked = sorted(series, key=lambda k: order.index(k) if k in order else len(order))
    bands = []
    for label in ranked:
        curves = series[label]
        at: dict[float, list[float]] = {}
        for curve in curves:
            for px, py in zip(curve.x, curve.y, strict=True):
                at.setdefault(px, []).append(py)
        xs = sorted(at)
        bands.append(
            Band(
                label=label,
                x=tuple(xs),
                mean=tuple(statistics.fmean(at[v]) for v in xs),
                low=tuple(min(at[v]) for v in xs),
                high=tuple(max(at[v]) for v in xs),
                n=len(curves),
            )
        )
    return bands


def series_label(spec: RunSpec) -> str:
    """A run's configuration in words, without its seed: ``"Baseline"``, ``"ELMo, λ=0.001,
    input"``, ``"ELMo, last layer only, input+output, state carry"``; the state and fine-tuning
    are named where they are not the default (reset, frozen)."""
    if spec.representation == NO_REPRESENTATION:
        return BASELINE_LABEL
    parts = [representation_label(spec.representation, spec.representation_config)]
    if spec.mix.mode == "last":
        parts.append("last layer only")
    else:
        dynamic = "per-token weights, " if spec.mix.mode == "dynamic" else ""
        parts.append(f"{dynamic}λ={spec.mix.lam:g}")
    parts.append("+".join(spec.sites))
    if spec.state != "reset":
        parts.append(f"state {spec.state}")
    if spec.representation_config.get("finetune"):
        parts.append("fine-tuned")
    return ", ".join(parts)


def sample_efficiency_curves(
    records: Iterable[RunRecord], task: str, metric_key: str, scale: float = 1.0
) -> dict[str, list[EfficiencyPoint]]:
    """Metric against training-set share, per system (paper §5.4, Figure 1).

    Args:
        records: the runs; those of other tasks or without ``metric_key`` are ignored. The
            caller chooses one configuration per system (seeds and shares vary).
        task: the task whose runs are used.
        metric_key: key in ``record.metrics`` (e.g. ``"dev_accuracy"``), natural units.
        scale: multiplier of the values (100 for percentages).

    Returns:
        System label (``"Baseline"`` for representation ``"none"``, else the representation's
        name) → points sorted by share; a spec's ``train_fraction`` of ``None`` counts as 1.0.
    """
    values: dict[str, dict[float, list[float]]] = {}
    for record in records:
        spec = record.spec
        value = record.metrics.get(metric_key)
        if spec.task != task or value is None:
            continue
        label = BASELINE_LABEL if spec.representation == NO_REPRESENTATION else spec.representation
        fraction = 1.0 if spec.train_fraction is None else float(spec.train_fraction)
        values.setdefault(label, {}).setdefault(fraction, []).append(float(value) * scale)
    ordered = sorted(values, key=lambda label: (label != BASELINE_LABEL, label))
    return {
        label: [
            EfficiencyPoint(
                train_fraction=fraction,
                mean=statistics.fmean(ys),
                std=statistics.stdev(ys) if len(ys) > 1 else 0.0,
                n=len(ys),
            )
            for fraction, ys in sorted(values[label].items())
        ]
        for label in ordered
    }


def describe(record: RunRecord) -> str:
    """A short legend label, e.g. ``"snli elmo all λ=0.001 input+output s0 (3f9c2a1b7e04)"``."""
    spec = record.spec
    parts = [spec.task, spec.representation]
    if spec.sites:
        parts.append(spec.mix.label if spec.mix.mode != "all" else f"all {spec.mix.label}")
        parts.append("+".join(spec.sites))
    parts.append(f"s{spec.seed}")
    return f"{' '.join(parts)} ({record.run_id})"


def plot_layer_weights(
    records: Iterable[RunRecord],
    path: str | os.PathLike[str],
    title: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Path:
    """Bars of ``softmax(w)`` per biLM layer, mean ± std over the seeds: one row of panels per
    task, data set and configuration (``labels[run_id]``, else :func:`series_label`), one panel
    per site; for dynamic mixes (every run logged ``layer_weights_std``) mean ± the per-token
    std instead.

    Returns:
        The PNG path.

    Raises:
        ValueError: no run logged layer weights, or runs of one group disagree on a site's
            number of layers.
        ImportError: matplotlib is not installed.
    """
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for record in records:
        if final_layer_weights(record):
            label = (labels or {}).get(record.run_id) or series_label(record.spec)
            key = (record.spec.task, record.spec.data, label)
            groups.setdefault(key, []).append(record)
    if not groups:
        raise ValueError(f"no run has {LOG_KEY!r} in its log")
    panels = {key: layer_weights(runs) for key, runs in groups.items()}
    cols = max(len(sites) for sites in panels.values())
    figure = _figure_class()(figsize=(3.4 * cols, 2.6 * len(panels) + 0.5), layout="constrained")
    axes = figure.subplots(len(panels), cols, squeeze=False)
    for row, ((task, data, label), weights) in zip(axes, panels.items(), strict=True):
        for ax, (site, stats) in zip(row, weights.items(), strict=False):
            layers = list(range(len(stats.mean)))
            per_token = stats.token_std is not None
            error = stats.token_std if stats.token_std is not None else stats.std
            ax.bar(layers, stats.mean, yerr=error, capsize=4, color="tab:blue")
            ax.set_xticks(layers, [f"layer {j}" for j in layers])
            ax.set_ylim(0.0, 1.0)
            ax.set_ylabel("mean s_t (± per-token std)" if per_token else "softmax(w) ± sd")
            seeds = f"n={stats.n}{', per token' if per_token else ''}"
            where = f"{_task_words(task)} on {_data_words(data)}, {label}"
            ax.set_title(f"{where}\n{site} site ({seeds})", fontsize="small")
        for ax in row[len(weights) :]:
            ax.axis("off")
    if title:
        figure.suptitle(title)
    return _save(figure, path)


def _task_words(task: str) -> str:
    """A task's name as its tables write it (``"SST-5"``), or its registry name."""
    from tasks.registry import TASKS

    spec = TASKS.get(task)
    return spec.table_rows[0].label if spec is not None and spec.table_rows else task


def plot_learning_curves(
    records: Iterable[RunRecord],
    path: str | os.PathLike[str],
    metric: str,
    x: str = "epoch",
    scale: float = 1.0,
    title: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> Path:
    """``metric`` against ``x``, one panel: per configuration (:func:`learning_bands`) the mean
    over its seeds as a line and their range as a band, each in its own colour.

    Args:
        records: the runs.
        path: the PNG to write.
        metric: log key of the y values (natural units), e.g. ``"dev_f1"``.
        x: log key of the x values.
        scale: y multiplier (100 for percentages).
        title: the panel's title.
        labels: run id → legend text (default: :func:`series_label`).

    Returns:
        The PNG path.

    Raises:
        ValueError: no run logged both keys.
        ImportError: matplotlib is not installed.
    """
    bands = learning_bands(records, metric, labels, x, scale)
    if not bands:
        raise ValueError(f"no run logged both {x!r} and {metric!r}")
    ylabel = metric if scale == 1 else f"{metric} × {scale:g}"
    return plot_learning_panels([Panel(title or "", tuple(bands), ylabel)], path, xlabel=x)


def plot_learning_panels(
    panels: Sequence[Panel],
    path: str | os.PathLike[str],
    title: str | None = None,
    xlabel: str = "epoch",
) -> Path:
    """Learning curves, one panel per task and data set (:class:`Panel`): each series the mean
    over its seeds as a line with markers and the seeds' range as a band, one colour per series
    label in the whole figure (never reused while the palette lasts: 20 colours), a legend in
    words per panel.

    Returns:
        The PNG path.

    Raises:
        ValueError: no panel has a band.
        ImportError: matplotlib is not installed.
    """
    panels = [p for p in panels if p.bands]
    if not panels:
        raise ValueError("no learning curve to plot")
    labels = list(dict.fromkeys(b.label for p in panels for b in p.bands))
    colours = dict(zip(labels, _palette(len(labels)), strict=True))
    cols = min(2, len(panels))
    rows = (len(panels) + cols - 1) // cols
    figure = _figure_class()(figsize=(6.4 * cols, 4.0 * rows + 0.4), layout="constrained")
    axes = figure.subplots(rows, cols, squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        for band in panel.bands:
            colour = colours[band.label]
            seeds = f"{band.n} seed{'s' if band.n > 1 else ''}"
            ax.plot(
                band.x,
                band.mean,
                marker="o",
                markersize=3,
                color=colour,
                label=f"{band.label} ({seeds})",
            )
            if band.n > 1:
                ax.fill_between(band.x, band.low, band.high, color=colour, alpha=0.18, linewidth=0)
        ax.set_title(panel.title, fontsize="medium")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    if title:
        figure.suptitle(title)
    return _save(figure, path)


def _palette(n: int) -> list[Any]:
    """``n`` distinct colours: tab10's, then the lighter half of tab20 (cycled beyond 20)."""
    colormaps = importlib.import_module("matplotlib").colormaps
    strong = list(colormaps["tab10"].colors)
    light = list(colormaps["tab20"].colors)[1::2]
    colours = strong + light
    return [colours[i % len(colours)] for i in range(n)]


def plot_sample_efficiency(
    curves: Mapping[str, Sequence[EfficiencyPoint | tuple[float, float, float, int]]],
    path: str | os.PathLike[str],
    title: str | None = None,
    metric_label: str = "metric",
) -> Path:
    """Figure 1: the metric against the % of the training set used (log scale, 0.1 %–100 %),
    one line per system with a ± std band over seeds.

    Args:
        curves: :func:`sample_efficiency_curves` output (label → points).
        path: the PNG to write.
        title: the axes' title (e.g. the task).
        metric_label: y axis label.

    Returns:
        The PNG path.

    Raises:
        ValueError: no curve has a point.
        ImportError: matplotlib is not installed.
    """
    if not any(curves.values()):
        raise ValueError("no sample-efficiency points to plot")
    figure = _figure_class()(figsize=(5.6, 4.0), layout="constrained")
    ax = figure.subplots()
    for label, points in curves.items():
        if not points:
            continue
        rows = sorted(EfficiencyPoint(*p) for p in points)
        xs = [100.0 * p.train_fraction for p in rows]
        means = [p.mean for p in rows]
        low = [p.mean - p.std for p in rows]
        high = [p.mean + p.std for p in rows]
        (line,) = ax.plot(xs, means, marker="o", markersize=4, label=label)
        if any(p.std > 0 for p in rows):
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xscale("log")
    ax.set_xlim(*FRACTION_RANGE)
    ticks = [0.1, 1.0, 10.0, 100.0]
    ax.set_xticks(ticks, [f"{t:g}%" for t in ticks])
    ax.set_xlabel("training set used (%, log scale)")
    ax.set_ylabel(metric_label)
    ax.grid(alpha=0.3, which="both")
    ax.legend()
    if title:
        ax.set_title(title)
    return _save(figure, path)


def plot_layer_weights_figure(
    weights: Mapping[str, Mapping[str, Sequence[float]]],
    path: str | os.PathLike[str],
    title: str | None = None,
    spread: Mapping[str, Mapping[str, Sequence[float]]] | None = None,
) -> Path:
    """Figure 2: softmax-normalised layer weights of every task, one heat map per site.

    Rows are tasks, columns biLM layers ``0..L``; each cell prints its weight. As in the paper,
    weights below 1/3 are hatched with horizontal lines and those above 2/3 dotted. A task
    without a site, or with fewer layers, leaves those cells blank. Rows of dynamic mixes (those
    in ``spread``) show the mean per-token weight with an error bar: the cell's height is the
    weight axis 0..1 and a black bar spans mean ± the per-token std (the text adds "±std").

    Args:
        weights: task label → site (``"input"`` / ``"output"``) → weights ``s_0..s_L``, e.g.
            ``{k: {site: list(w.mean) for site, w in layer_weights(runs).items()}}``.
        path: the PNG to write.
        title: the figure's title.
        spread: task label → site → per-token std per layer (``SiteWeights.token_std``) for
            the rows of dynamic mixes; other rows are drawn as before.

    Returns:
        The PNG path.

    Raises:
        ValueError: no task has weights.
        ImportError: matplotlib is not installed.
    """
    tasks = [task for task, sites in weights.items() if any(sites.values())]
    if not tasks:
        raise ValueError("no layer weights to plot")
    sites = sorted({site for task in tasks for site, w in weights[task].items() if w})
    layers = max(len(w) for task in tasks for w in weights[task].values())
    figure = _figure_class()(
        figsize=(1.2 + 2.6 * len(sites) + 0.5 * layers, 1.2 + 0.45 * len(tasks)),
        layout="constrained",
    )
    axes = figure.subplots(1, len(sites), squeeze=False)[0]
    colormap = importlib.import_module("matplotlib").colormaps["Blues"]
    for ax, site in zip(axes, sites, strict=True):
        for i, task in enumerate(tasks):
            stds = list((spread or {}).get(task, {}).get(site, ()))
            for j, value in enumerate(weights[task].get(site, ())):
                std = float(stds[j]) if j < len(stds) else None
                _weight_cell(ax, (j, i), float(value), std, colormap)
        ax.set_xlim(-0.5, layers - 0.5)
        ax.set_ylim(len(tasks) - 0.5, -0.5)
        ax.set_xticks(range(layers), [str(j) for j in range(layers)])
        ax.set_yticks(range(len(tasks)), tasks)
        ax.set_xlabel("biLM layer")
        ax.set_title(site.capitalize())
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    if title:
        figure.suptitle(title)
    return _save(figure, path)


# ------------------------------------------------------------------- figures of rendered tables
def table_plots(
    tables: Sequence[TableSpec], runs: Sequence[RunRecord], out: Path, stem: str
) -> list[Path]:
    """The PNGs of rendered tables: learned layer weights per representation, Figure 2 (for
    tables of several tasks) and dev learning curves per task, of the tables' runs.

    Args:
        tables: the rendered tables.
        runs: the stored records of the tables' runs.
        out: the folder of the PNGs (created).
        stem: the file names' prefix (``<stem>-<what>.png``).

    Returns:
        The PNGs written (none when no run of the tables is stored).
    """
    from tasks.registry import get_task

    written: list[Path] = []
    if not runs:
        return written
    out.mkdir(parents=True, exist_ok=True)
    marks = run_marks(r.spec for r in runs)
    labels, data_names = _table_labels(tables)
    for name in sorted({r.spec.representation for r in runs} - {NO_REPRESENTATION}):
        mine = [r for r in runs if r.spec.representation == name]  # one layer count each
        tag = "" if name == "elmo" else "-" + "".join(c if c.isalnum() else "_" for c in name)
        static = [r for r in mine if r.spec.mix.mode != "dynamic"]
        dynamic = [r for r in mine if r.spec.mix.mode == "dynamic"]  # per-token: own figure
        for group, suffix in ((static, ""), (dynamic, "-dynamic")):
            if group:
                path = out / f"{stem}{tag}{suffix}-layer-weights.png"
                words = representation_label(name, mine[0].spec.representation_config)
                kind = "per-token weights" if suffix else "softmax weights"
                title = f"Learned layer weights of {words} ({kind}){marks}"
                written.append(plot_layer_weights(group, path, title, labels))
    written += _figure2(tables, runs, out, stem)
    smoke = run_marks((r.spec for r in runs), demo=False)  # the panels name the data
    for task in sorted({r.spec.task for r in runs}):
        metric, name = get_task(task).metric, _task_words(task)
        what = f"dev {metric.label or metric.key}"
        panels = []
        for data in dict.fromkeys(r.spec.data for r in runs if r.spec.task == task):
            mine = [r for r in runs if r.spec.task == task and r.spec.data == data]
            bands = learning_bands(mine, f"dev_{metric.key}", labels, scale=metric.scale)
            where = data_names.get((task, data), _data_words(data))
            panels.append(Panel(f"{name} on {where}: {what}", tuple(bands), what))
        path = out / f"{stem}-{task}-learning-curves.png"
        title = f"{name}: {what} per epoch, mean over seeds (band: the seeds' range){smoke}"
        written.append(plot_learning_panels(panels, path, title))
    return written


def _table_labels(
    tables: Sequence[TableSpec],
) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Run id → its column's label (the first table and column that expects it), and (task,
    data) → the data set in words from the rows' labels (a real set's name and folder)."""
    from experiments.report.render import RunsColumn

    labels: dict[str, str] = {}
    names: dict[tuple[str, str], str] = {}
    for table in tables:
        for row in table.rows:
            key = (row.base.task, row.base.data)
            if key not in names and row.base.data != "demo":
                names[key] = f"{row.label.split(' (')[0]} ({_data_words(row.base.data)})"
            for column in table.columns:
                if not isinstance(column, RunsColumn):
                    continue
                for spec in table.expected(row, column):
                    labels.setdefault(spec.run_id, column.label)
    return labels, names


def _data_words(data: str) -> str:
    """``"DEMO data"``, or the data label without the shared-folder prefix."""
    return "DEMO data" if data == "demo" else data.removeprefix(SHARED_PREFIX)


def run_marks(specs: Iterable[RunSpec], demo: bool = True) -> str:
    """A plot title's notes on its runs: `` [DEMO data]`` when any used the bundled DEMO set
    (unless ``demo`` is false) and :func:`~experiments.report.render.smoke_label` (``--limit``,
    ``--max-epochs``); ``""`` when neither applies."""
    from experiments.report.render import smoke_label

    specs = list(specs)
    data = " [DEMO data]" if demo and any(s.data == "demo" for s in specs) else ""
    return data + smoke_label(specs)


def _figure2(
    tables: Sequence[TableSpec], runs: Sequence[RunRecord], out: Path, stem: str
) -> list[Path]:
    """Paper Figure 2 for tables of several tasks: the learned softmax weights of each row's
    ELMo configuration (its base spec, mean over seeds), one heat map per site; a dynamic row
    shows the mean per-token weights with their per-token spread."""
    by_id = {r.run_id: r for r in runs}
    weights: dict[str, dict[str, list[float]]] = {}
    spread: dict[str, dict[str, list[float]]] = {}
    for table in tables:
        for row in table.rows:
            task = row.label.split(" (")[0]
            row_seeds = row.seeds if row.seeds is not None else table.seeds
            ids = (derive(row.base, {"seed": s}).run_id for s in row_seeds)
            found = [by_id[i] for i in ids if i in by_id]
            if task not in weights and found and row.base.representation == "elmo":
                stats = layer_weights(found)
                weights[task] = {k: list(v.mean) for k, v in stats.items()}
                spread[task] = {k: list(v.token_std) for k, v in stats.items() if v.token_std}
    if len(weights) < 2:
        return []
    data = run_marks(r.spec for r in runs)
    path = out / f"{stem}-figure2-layer-weights.png"
    return [plot_layer_weights_figure(weights, path, f"Learned layer weights{data}", spread)]


def efficiency_plots(
    table: TableSpec, runs: Sequence[RunRecord], out: Path, stem: str
) -> list[Path]:
    """One Figure 1 plot per task of a sample-efficiency table: dev metric against the share of
    the training set, both systems (``<stem>-<task>.png`` in ``out``), from ``runs``, the stored
    records of the table's runs."""
    from tasks.registry import get_task

    written = []
    for task in sorted({r.spec.task for r in runs}):
        metric = get_task(task).metric
        curves = sample_efficiency_curves(runs, task, f"dev_{metric.key}", scale=metric.scale)
        path = out / f"{stem}-{task}.png"
        out.mkdir(parents=True, exist_ok=True)
        title = f"{task}: baseline vs ELMo by training-set share" + (
            " (DEMO data)" if table.rows[0].base.data == "demo" else ""
        )
        title += run_marks((r.spec for r in runs if r.spec.task == task), demo=False)
        written.append(plot_sample_efficiency(curves, path, title, metric.label or metric.key))
    return written


def _weight_cell(
    ax: Any, at: tuple[int, int], value: float, std: float | None, colormap: Any
) -> None:
    """One Figure 2 cell at (layer, row): colour, hatch, text; with ``std`` an error bar."""
    j, i = at
    hatch = "--" if value < 1 / 3 else "." if value > 2 / 3 else None
    ax.add_patch(
        _rectangle()(
            (j - 0.5, i - 0.5),
            1.0,
            1.0,
            facecolor=colormap(0.15 + 0.7 * min(max(value, 0.0), 1.0)),
            edgecolor="white",
            hatch=hatch,
            linewidth=1.0,
        )
    )
    text = f"{value:.2f}" if std is None else f"{value:.2f}±{std:.2f}"
    ax.text(
        j,
        i,
        text,
        ha="center",
        va="center",
        fontsize="small" if std is None else "x-small",
        color="white" if value > 0.5 else "black",
        bbox={"facecolor": "white", "alpha": 0.0 if value > 0.5 else 0.6, "lw": 0},
    )
    if std is not None:  # the cell's height is the weight axis: bottom 0, top 1 (rows go down)

        def y(weight: float) -> float:
            return i + 0.45 - 0.9 * min(max(weight, 0.0), 1.0)

        x = j + 0.38
        ax.plot([x, x], [y(value - std), y(value + std)], color="black", linewidth=1.2)
        ax.plot([x], [y(value)], marker="o", markersize=3, color="black")


def _rectangle() -> Any:
    return importlib.import_module("matplotlib.patches").Rectangle


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
