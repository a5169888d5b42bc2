"""Where a classification peer table's seed spread comes from: each seed's dev accuracy and its
recall of each gold label, per epoch, on both sides of ``nox -s peer`` (stored records only).

    python scripts/peer_seed_spread.py --task snli
    python scripts/peer_seed_spread.py --task sst5 --data shared:dev/sentence_polarity \
        --epochs 3 --batch-size 100

Reads the row's records (``results/peer/runs/<task>``: allennlp's; ``results/peer/project-runs``:
the project's) through :func:`experiments.peer.run.collect`, and the gold label of each dev unit
from the data the runs were made from, read by the task's own reader: SNLI's pairs by
``pairID`` (``--dev FILE``; by default DEMO SNLI's, built by ``tasks/snli/demo.py``), SST-5's
sentences by line (the ``paper`` preset's reader on ``--data``). Prints, per side, seed and
epoch, the accuracy and the recall of each label; then per epoch each side's seed sd, their mean
from epoch 2 on, and at the last epoch the variance ratio with its two-sided F test (three seeds
a side: F(2, 2), whose upper tail is exactly 1 / (1 + F)).
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.peer.render import peer_row
from experiments.peer.run import PeerRequest, Series, collect

#: The tasks whose dev units are single labelled examples.
TASKS = ("snli", "sst5")


def recall_by_label(
    ids: Sequence[str], correct: Sequence[float], gold: Mapping[str, str]
) -> dict[str, float]:
    """Share of each gold label's pairs that the run got right (0–1).

    Raises:
        KeyError: a unit id that is not a pair of the dev file (the runs read other data).
    """
    hits: dict[str, list[float]] = defaultdict(list)
    for unit, value in zip(ids, correct, strict=True):
        hits[gold[unit]].append(value)
    return {label: statistics.fmean(hits[label]) for label in sorted(hits)}


def gold_labels(task: str, data: str, dev: Path | None) -> dict[str, str]:
    """Unit id → gold label name of the dev split the peer scores.

    Raises:
        SystemExit: the data's dev split cannot be found.
    """
    if task == "snli":
        from tasks.snli.data import SnliReader, split_file
        from tasks.snli.demo import ensure_demo

        path = dev or (split_file(ensure_demo(), "dev") if data == "demo" else None)
        if path is None:
            raise SystemExit(f"no dev file for --data {data}: pass --dev FILE")
        return {ex.pair_id: ex.label for ex in SnliReader(path)}
    from experiments.data.real_sets import data_path
    from tasks.core import configure
    from tasks.sst5.config import PRESETS
    from tasks.sst5.data import load_splits
    from tasks.sst5.demo import ensure_demo as sst5_demo

    folder = None if data == "demo" else str(data_path(data))
    read = load_splits(configure(PRESETS, "paper", []), folder, sst5_demo)
    return {str(ex.line): read.labels[ex.label] for ex in read.splits["dev"]}


def f_test_3v3(sd_a: float, sd_b: float) -> float:
    """Two-sided p of the variance ratio of two samples of three (F(2, 2): P(F > f) = 1/(1+f))."""
    if min(sd_a, sd_b) == 0.0:
        return 0.0
    f = max(sd_a, sd_b) ** 2 / min(sd_a, sd_b) ** 2
    return min(1.0, 2.0 / (1.0 + f))


#: One evaluation of one seed: seed, epoch, accuracy (points), recall per gold label (points).
Point = tuple[int, int, float, dict[str, float]]


def _points(series: Series, gold: Mapping[str, str]) -> list[Point]:
    """Every evaluation of ``series`` with its units, recall per label computed once."""
    out = []
    for seed, points in sorted(series.runs.items()):
        for p in points:
            if p.units is not None:
                ids, rows = p.units
                recall = recall_by_label(ids, [r[0] for r in rows], gold)
                out.append((seed, p.epoch, 100 * p.metric, {k: 100 * v for k, v in recall.items()}))
    return out


def _per_epoch(points: Sequence[Point], value: Any) -> dict[int, list[float]]:
    by_epoch: dict[int, list[float]] = defaultdict(list)
    for point in points:
        by_epoch[point[1]].append(value(point))
    return dict(sorted(by_epoch.items()))


def _sds(points: Sequence[Point]) -> dict[int, float]:
    """Per epoch, the seeds' sd of the accuracy (points)."""
    by_epoch = _per_epoch(points, lambda p: p[2])
    return {e: statistics.stdev(v) for e, v in by_epoch.items() if len(v) > 1}


def _imbalance(points: Sequence[Point]) -> dict[int, float]:
    """Per epoch, the mean over seeds of the gap between the best- and worst-recalled label
    (points): how far from balanced each seed's decision boundary sits."""
    gaps = _per_epoch(points, lambda p: max(p[3].values()) - min(p[3].values()))
    return {e: statistics.fmean(v) for e, v in gaps.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS, default="snli")
    parser.add_argument("--row", default="baseline", help="the table's row (its project side)")
    parser.add_argument("--data", default="demo", help="the data label the runs were made on")
    parser.add_argument(
        "--dev", type=Path, default=None, help="SNLI: that data's dev file (default: DEMO's)"
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("results/peer"))
    args = parser.parse_args(argv)

    gold = gold_labels(args.task, args.data, args.dev)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    representation = "none" if peer_row(args.row) == "baseline" else "elmo"
    request = PeerRequest(
        args.task, args.data, (), seeds, args.epochs, args.batch_size, (representation,)
    )
    found = {(s.side, s.row): s for s in collect(request, args.out)}
    keys = [("allennlp", peer_row(args.row)), ("project", args.row)]
    if any(key not in found for key in keys):
        raise SystemExit(
            f"no stored {args.task} records of row {args.row!r} on both sides under {args.out} "
            f"(data {args.data}, seeds {args.seeds}, {args.epochs} epochs, batch {args.batch_size})"
        )
    sides = [(found[key].side, _points(found[key], gold)) for key in keys]
    print(f"{args.task} peer, row {args.row!r}: dev accuracy and recall per gold label (%)")
    for side, points in sides:
        for seed, epoch, accuracy, recall in points:
            cells = "  ".join(f"{label[:4]} {v:5.1f}" for label, v in recall.items())
            print(f"  {side:8}  seed {seed}  epoch {epoch}  acc {accuracy:5.1f}  {cells}")
    sds = [_sds(points) for _, points in sides]
    gaps = [_imbalance(points) for _, points in sides]
    print("\nper epoch (points): seed sd of the accuracy, allennlp / project; mean best-worst")
    print("label recall gap, allennlp / project")
    for epoch in sorted(sds[0]):
        print(
            f"  epoch {epoch}  sd {sds[0][epoch]:5.1f} / {sds[1].get(epoch, float('nan')):5.1f}"
            f"  recall gap {gaps[0][epoch]:5.1f} / {gaps[1].get(epoch, float('nan')):5.1f}"
        )
    later = [e for e in sds[0] if e >= 2 and e in sds[1]]
    if later:
        mean = [statistics.fmean(sd[e] for e in later) for sd in sds]
        print(f"  mean over epochs {later[0]}–{later[-1]}: {mean[0]:.1f}  {mean[1]:.1f}")
        last = later[-1]
        if len(seeds) == 3:
            p = f_test_3v3(sds[0][last], sds[1][last])
            print(f"  epoch {last}: variance ratio F test (3 seeds a side), two-sided p {p:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
