"""``python -m experiments``: run specs and sweeps, reproduce named tables, render.

    python -m experiments run squad --repr elmo --sites input,output --seeds 0,1,2
    python -m experiments reproduce squad_elmo [--seeds 0,1,2] [--data DIR] [--config paper]
    python -m experiments render table2

Finished runs are stored in ``results/runs/`` (append-only; a rerun skips them) and tables are
written to ``results/tables/``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments import named
from experiments.executors import run_sweep
from experiments.render import render
from experiments.spec import MixSpec, RunSpec, derive, expand_sweep
from experiments.store import ResultsStore

REPO = Path(__file__).resolve().parents[1]
DEFAULT_STORE = REPO / "results" / "runs"
DEFAULT_WORK = REPO / "runs" / "work"
DEFAULT_CACHE = Path.home() / ".cache" / "elmo-bench" / "features"


def _seeds(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in text.split(",") if s)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seeds", type=_seeds, default=(0,), help="comma-separated (default 0)")
    parser.add_argument("--data", default="demo", help="data folder, or 'demo' (default)")
    parser.add_argument("--config", default="mini", choices=("mini", "paper"))
    parser.add_argument("--checkpoint", help="biLM checkpoint (default: the shipped small biLM)")
    parser.add_argument("--executor", default="local", choices=("local", "ray"))
    parser.add_argument("--address", help="Ray cluster address (with --executor ray)")
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE)
    parser.add_argument("--quiet", action="store_true")


def _run_all(specs: Sequence[RunSpec], args: argparse.Namespace) -> None:
    from experiments.runner import run_spec

    run_one = functools.partial(
        run_spec, work_root=DEFAULT_WORK, cache_dir=DEFAULT_CACHE, progress=not args.quiet
    )
    result = run_sweep(specs, run_one, ResultsStore(args.store), args.executor, args.address)
    print(f"runs: {len(result.ran)} ran, {len(result.skipped)} already stored", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m experiments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="train one configuration over seeds")
    run.add_argument("task")
    run.add_argument("--repr", default="elmo", help="elmo | bilm-random | glove | cove | none")
    run.add_argument("--sites", default="input,output")
    run.add_argument("--mode", default="all", choices=("all", "last"))
    run.add_argument("--lam", type=float, default=0.0)
    run.add_argument("--layer-norm", action="store_true")
    run.add_argument("--dropout", type=float, default=0.5)
    run.add_argument("--state", default="reset", choices=("reset", "carry", "warm"))
    run.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", dest="overrides")
    _common(run)
    rep = sub.add_parser("reproduce", help="run and render a named table")
    rep.add_argument("name", choices=sorted(named.NAMED))
    _common(rep)
    ren = sub.add_parser("render", help="render a named table from stored runs only")
    ren.add_argument("name", choices=sorted(named.NAMED))
    ren.add_argument("--format", default="markdown", choices=("markdown", "latex", "csv"))
    _common(ren)
    args = parser.parse_args(argv)
    if args.executor == "ray" and args.address is None:
        os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

    if args.command == "run":
        rep_config = {"checkpoint": args.checkpoint} if args.checkpoint else {}
        base = named.base_spec(args.task, args.config, args.data, rep_config)
        if args.repr == "none":
            base = named.baseline(base)
        else:
            base = derive(
                base,
                {
                    "representation": args.repr,
                    "sites": tuple(s for s in args.sites.split(",") if s),
                    "mix": MixSpec(args.mode, args.lam, args.layer_norm),
                    "dropout": args.dropout,
                    "state": args.state,
                },
            )
        base = derive(base, {"overrides": tuple(args.overrides)})
        specs = expand_sweep(base, seed=list(args.seeds))
        _run_all(specs, args)
        store = ResultsStore(args.store)
        for spec in specs:
            print(
                json.dumps(
                    {"run_id": spec.run_id, "seed": spec.seed, **store.get(spec.run_id).metrics}
                )
            )
        return 0

    tables = named.tables(
        args.name,
        args.config,
        args.data,
        args.seeds,
        {"checkpoint": args.checkpoint} if args.checkpoint else {},
    )
    if args.command == "reproduce":
        _run_all([s for t in tables for s in named.expected_specs(t)], args)
    records = list(ResultsStore(args.store).records())
    paper = named.paper()
    out_dir = REPO / "results" / "tables"
    out_dir.mkdir(parents=True, exist_ok=True)
    fmt = getattr(args, "format", "markdown")
    for table in tables:
        text = render(table, records, paper, fmt=fmt)
        suffix = {"markdown": "md", "latex": "tex", "csv": "csv"}[fmt]
        (
            out_dir / f"{args.name}-{table.name}-{args.config}-{_label(args.data)}.{suffix}"
        ).write_text(text, encoding="utf-8")
        print(text)
    _plots(
        tables,
        records,
        REPO / "results" / "plots",
        f"{args.name}-{args.config}-{_label(args.data)}",
    )
    return 0


def _plots(tables: Sequence[object], records: Sequence[object], out: Path, stem: str) -> None:
    """Learned layer weights per site and dev learning curves of the table's runs (PNG)."""
    try:
        from experiments.plots import plot_layer_weights, plot_learning_curves
    except ImportError:
        return
    wanted = {s.run_id for t in tables for s in named.expected_specs(t)}  # type: ignore[arg-type]
    runs = [r for r in records if r.run_id in wanted]  # type: ignore[attr-defined]
    if not runs:
        return
    out.mkdir(parents=True, exist_ok=True)
    try:
        path = plot_layer_weights(
            [r for r in runs if r.spec.representation != "none"], out / f"{stem}-layer-weights.png"
        )
        print(f"wrote {path}", file=sys.stderr)
    except (ValueError, ImportError):
        pass
    try:
        path = plot_learning_curves(runs, out / f"{stem}-learning-curves.png", "dev_f1", scale=100)
        print(f"wrote {path}", file=sys.stderr)
    except (ValueError, ImportError):
        pass


def _label(data: str) -> str:
    return "demo" if data == "demo" else Path(data).name


if __name__ == "__main__":
    sys.exit(main())
