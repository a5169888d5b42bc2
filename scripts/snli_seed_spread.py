"""Where the SNLI peer table's seed spread comes from: each seed's dev accuracy and its recall of
each gold label, per epoch, on both sides of ``nox -s peer -- --task snli`` (stored records only).

    python scripts/snli_seed_spread.py
    python scripts/snli_seed_spread.py --row baseline --out results/peer

Reads the row's records (``results/peer/runs/snli``: allennlp's; ``results/peer/project-runs``:
the project's) through :func:`experiments.peer.run.collect`, and the gold labels of the dev
pairs from the data the runs were made from (``--dev``; by default DEMO SNLI's, built by
``tasks/snli/demo.py``).
Prints, per side, seed and epoch, the accuracy and the recall of entailment / neutral /
contradiction; then per epoch each side's seed sd, their mean from epoch 2 on, and at the last
epoch the variance ratio with its two-sided F test (three seeds a side: F(2, 2), whose upper
tail is exactly 1 / (1 + F)).
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

from experiments.peer.run import PeerRequest, Series, collect
from tasks.snli.data import LABELS, SnliReader, split_file
from tasks.snli.demo import ensure_demo


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
    return {label: statistics.fmean(hits[label]) for label in LABELS if hits[label]}


def f_test_3v3(sd_a: float, sd_b: float) -> float:
    """Two-sided p of the variance ratio of two samples of three (F(2, 2): P(F > f) = 1/(1+f))."""
    if min(sd_a, sd_b) == 0.0:
        return 0.0
    f = max(sd_a, sd_b) ** 2 / min(sd_a, sd_b) ** 2
    return min(1.0, 2.0 / (1.0 + f))


def _print_series(series: Series, gold: Mapping[str, str]) -> None:
    for seed, points in sorted(series.runs.items()):
        for p in points:
            if p.units is None:
                continue
            ids, rows = p.units
            recall = recall_by_label(ids, [r[0] for r in rows], gold)
            cells = "  ".join(f"{label[:4]} {100 * v:5.1f}" for label, v in recall.items())
            where = f"{series.side:8}  seed {seed}  epoch {p.epoch}"
            print(f"  {where}  acc {100 * p.metric:5.1f}  {cells}")


def _sds(series: Series) -> dict[int, float]:
    by_epoch: dict[int, list[float]] = defaultdict(list)
    for points in series.runs.values():
        for p in points:
            by_epoch[p.epoch].append(100 * p.metric)
    return {e: statistics.stdev(v) for e, v in sorted(by_epoch.items()) if len(v) > 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--row", default="baseline", help="the table's row (its project side)")
    parser.add_argument("--data", default="demo", help="the data label the runs were made on")
    parser.add_argument(
        "--dev", type=Path, default=None, help="that data's dev file (default: DEMO SNLI's)"
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("results/peer"))
    args = parser.parse_args(argv)

    dev = args.dev or split_file(ensure_demo(), "dev")
    if dev is None:
        raise SystemExit("the DEMO SNLI folder has no dev file; pass --dev FILE")
    gold = {ex.pair_id: ex.label for ex in SnliReader(dev)}
    seeds = tuple(int(s) for s in args.seeds.split(","))
    representation = "none" if args.row == "baseline" else "elmo"
    request = PeerRequest(
        "snli", args.data, (), seeds, args.epochs, args.batch_size, (representation,)
    )
    found = {(s.side, s.row): s for s in collect(request, args.out)}
    peer_row = "baseline" if args.row == "baseline" else "elmo"
    sides = [found.get(("allennlp", peer_row)), found.get(("project", args.row))]
    if None in sides:
        raise SystemExit(
            f"no stored records of row {args.row!r} on both sides under {args.out} "
            f"(data {args.data}, seeds {args.seeds}, {args.epochs} epochs, batch {args.batch_size})"
        )
    print(f"SNLI peer, row {args.row!r}: dev accuracy and recall per gold label (%)")
    for series in sides:
        assert series is not None
        _print_series(series, gold)
    sds = [_sds(s) for s in sides if s is not None]
    print("\nseed sd of the accuracy per epoch (points):  allennlp  project")
    for epoch in sorted(sds[0]):
        print(f"  epoch {epoch}  {sds[0][epoch]:8.1f}  {sds[1].get(epoch, float('nan')):7.1f}")
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
