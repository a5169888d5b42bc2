"""``python -m experiments``: run specs and sweeps, reproduce named tables, render.

    python -m experiments run squad --repr elmo --sites input,output --seeds 0,1,2
    python -m experiments sweep squad --repr elmo,bilm-random --mode all,last --lam 0,0.001,1 \\
        --sites input,input+output,output --seeds 0,1,2 [--executor ray --max-parallel 4]
    python -m experiments reproduce squad_elmo [--seeds 0,1,2] [--data DIR] [--config paper]
    python -m experiments render squad_elmo --store results/runs --out results
    python -m experiments reproduce table1 --tasks squad,ner --seeds 0,1,2
    python -m experiments compare --repr my_package:MyRep --tasks squad,sst5 [--against elmo]

Every command takes ``--device auto|cpu|cuda|cuda:N``, ``--precision fp32|bf16|fp16``,
``--wandb PROJECT`` (offline unless ``WANDB_MODE`` says otherwise) and ``--set KEY=VALUE`` on
the task's configuration (dotted keys: ``train.epochs=3``). Finished runs go to the store
(default ``runs/store``, append-only; a rerun skips them), tables and plots to ``--out``
(default ``runs``: ``runs/tables``, ``runs/plots``). The committed ``results/`` is written only
by an explicit ``render --store results/runs --out results``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from bilm.devices import DeviceError
from bilm.pretrained import cache_root
from experiments import named
from experiments.executors import Reuse, SweepError, run_sweep
from experiments.identity import current_records, run_identity
from experiments.render import Row, RunsColumn, TableSpec, load_paper, render
from experiments.spec import RunSpec, derive, expand_sweep
from experiments.store import ResultsStore, RunRecord
from experiments.wandb_sink import WandbOptions

DEFAULT_STORE = Path("runs/store")
DEFAULT_WORK = Path("runs/work")
DEFAULT_OUT = Path("runs")
FORMATS = {"markdown": "md", "latex": "tex", "csv": "csv"}


def _list(text: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _seeds(text: str) -> tuple[int, ...]:
    return tuple(int(s) for s in _list(text))


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(s) for s in _list(text))


def _share(text: str) -> float:
    """A number in [0, 1] (``--max-skipped``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share in [0, 1], got {text!r}")
    return value


def _budget(text: str) -> str:
    """``--cache-budget``: checked while parsing (a bad value exits 2 with one line)."""
    from tasks.common.feature_cache import parse_budget

    try:
        parse_budget(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text


def _sites(text: str) -> tuple[tuple[str, ...], ...]:
    """``input,input+output,output`` → one site set per comma."""
    return tuple(tuple(s for s in group.split("+") if s) for group in _list(text))


def _common(
    parser: argparse.ArgumentParser, train: bool = True, seeds: tuple[int, ...] | None = (0,)
) -> None:
    shown = ",".join(map(str, seeds)) if seeds is not None else "each task's own, e.g. 0,1,2"
    parser.add_argument(
        "--seeds", type=_seeds, default=seeds, help=f"comma-separated (default {shown})"
    )
    parser.add_argument("--data", default="demo", help="data folder, or 'demo' (default)")
    parser.add_argument("--config", default="mini", help="the task's preset: mini (default), paper")
    parser.add_argument(
        "--elmo",
        nargs="+",
        metavar="FILE",
        help="the biLM: OPTIONS.json WEIGHTS.hdf5 (official files), a project CHECKPOINT, or "
        "published:NAME (e.g. published:original, downloaded when online). Default: the shipped "
        "small biLM for mini, published:original for paper",
    )
    parser.add_argument(
        "--glove",
        metavar="PATH",
        help="GloVe text file (the paper: glove.840B.300d.txt, cased); converted once into a "
        "memory-mapped cache. Sets the task's word_vectors and the glove/cove input",
    )
    parser.add_argument(
        "--cove", metavar="WEIGHTS.pth", help="CoVe MT-LSTM weights (wmtlstm-*.pth)"
    )
    parser.add_argument(
        "--turian",
        metavar="PATH",
        help="Turian et al. (2010) 50-d embeddings (the coreference paper preset needs them); "
        "sets the task's turian_vectors",
    )
    parser.add_argument(
        "--finetune-bilm",
        nargs="?",
        const=1.0,
        type=float,
        default=None,
        metavar="EPOCHS",
        help="first fine-tune the biLM as a language model on the task's training text "
        "(paper §3.4; default 1 epoch; cached), then freeze it; records held-out perplexity "
        "before and after",
    )
    parser.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="task configuration changes, e.g. hidden=64 train.epochs=5",
    )
    parser.add_argument(
        "--eval-split",
        choices=("dev", "test"),
        help="split of Table 1's numbers (run and sweep: dev unless asked; reproduce and "
        "render: the task's own, test where its data has a labelled test split)",
    )
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE, help="results store")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="tables/ and plots/ here")
    parser.add_argument("--wandb", metavar="PROJECT", help="log to W&B (offline by default)")
    reuse = parser.add_mutually_exclusive_group()
    reuse.add_argument(
        "--reuse-stale",
        action="store_true",
        help="use stored runs even where what they were made from (data, biLM, resolved "
        "configuration, device, precision, threads, result versions) no longer matches; "
        "tables mark them (‡). Default: such runs are trained again (the old record is kept, "
        "marked superseded) and rendering leaves them out",
    )
    if train:
        reuse.add_argument(
            "--rerun",
            action="store_true",
            help="train every run again even when a matching record is stored (the old one "
            "is kept, marked superseded)",
        )
    if not train:
        return
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16"))
    parser.add_argument("--executor", default="local", choices=("local", "ray"))
    parser.add_argument("--address", help="Ray cluster address (with --executor ray)")
    parser.add_argument("--max-parallel", type=int, default=1, help="runs at once (default 1)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads per run (default 1: a CPU result then does not depend on the "
        "machine's core count; use --max-parallel to fill the cores); 0 = torch's default",
    )
    parser.add_argument("--cpus-per-run", type=float, default=1.0, help="Ray resources per run")
    parser.add_argument("--gpus-per-run", type=float, default=0.0, help="Ray resources per run")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="checkpoints of runs")
    parser.add_argument(
        "--cache",
        type=Path,
        help="feature cache (default: features/ under $ELMO_BENCH_CACHE, else ~/.cache/elmo-bench)",
    )
    parser.add_argument(
        "--cache-budget",
        type=_budget,
        help="disk the feature cache may use: 20GB, 500MB, 50%% (of free disk plus the "
        "cache, the default) or unlimited; least-recently used whole entries are evicted",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--max-skipped",
        type=_share,
        default=0.5,
        metavar="SHARE",
        help="refuse a split whose reader skipped more than this share of its examples "
        "(configured filters not counted; default 0.5); an empty split is always refused",
    )


PAPER_ELMO = "original"  # the published biLM of the paper (1B Word Benchmark, 93.6 M parameters)


def _run_config(args: argparse.Namespace, representation: str = "elmo") -> dict[str, object]:
    """The representation's configuration from ``--elmo``, ``--glove``, ``--cove``.

    The ``paper`` preset defaults to what the paper used (the published ELMo); it never falls
    back to a smaller substitute: a missing file is an error naming the flag.
    """
    elmo = list(args.elmo or [])
    if representation in ("elmo", "bilm-random"):
        if len(elmo) > 2:
            raise SystemExit("--elmo takes OPTIONS.json WEIGHTS.hdf5, CHECKPOINT or published:NAME")
        if not elmo and args.config == "paper" and representation == "elmo":
            elmo = [f"published:{PAPER_ELMO}"]
        tuned = {"finetune": args.finetune_bilm} if getattr(args, "finetune_bilm", None) else {}
        if tuned and representation != "elmo":
            raise SystemExit("--finetune-bilm applies to --repr elmo")
        if len(elmo) == 2:
            options, weights = elmo
            if representation == "bilm-random":
                return {"options": options}
            return {"options": options, "weights": weights, **tuned}
        if elmo and elmo[0].startswith("published:"):
            if representation == "bilm-random":
                raise SystemExit("bilm-random takes --elmo OPTIONS.json WEIGHTS.hdf5 or CHECKPOINT")
            return {"published": elmo[0].split(":", 1)[1], **tuned}
        return {"checkpoint": elmo[0], **tuned} if elmo else tuned
    if representation == "cove":
        if not args.cove or not args.glove:
            raise SystemExit(
                "cove needs --cove WEIGHTS.pth (https://s3.amazonaws.com/research.metamind.io/cove/"
                "wmtlstm-8f474287.pth) and --glove glove.840B.300d.txt (its input vectors)"
            )
        return {"weights": args.cove, "glove_path": args.glove}
    if representation == "glove":
        return {"path": args.glove} if args.glove else {}
    return {}


def _task_overrides(args: argparse.Namespace) -> list[str]:
    """``--set`` plus ``--glove`` as the task's ``word_vectors`` (the configs' common field)
    and ``--turian`` as its ``turian_vectors``."""
    extra = [f"word_vectors={args.glove}"] if args.glove else []
    extra += [f"turian_vectors={args.turian}"] if getattr(args, "turian", None) else []
    return [*args.overrides, *extra]


class UsageError(Exception):
    """A command-line mistake found before any run starts: ``main`` prints it on one line
    and returns 2."""


class _Parser(argparse.ArgumentParser):
    """``argparse`` whose errors are one line (``error: …``, exit status 2), no usage block."""

    def error(self, message: str) -> NoReturn:
        """Print ``error: <message>`` and exit with status 2."""
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")


def _one_line(error: BaseException) -> str:
    """An exception's message on one line (a KeyError's without its quotes)."""
    return " ".join(str(error.args[0] if error.args else error).split())


def validate_specs(specs: Sequence[RunSpec]) -> None:
    """Check every spec before any run starts: task registered, preset valid, the
    representation and its options known (no weights loaded), the ``--set`` overrides applied to
    the task's configuration (key exists, value parses and validates; no data read).

    Raises:
        UsageError: the first problem, in one line.
    """
    from tasks.registry import get_task
    from tasks.representations import check_representation

    seen: set[str] = set()
    for spec in specs:
        key = json.dumps(
            [
                spec.task,
                spec.preset,
                spec.overrides,
                spec.representation,
                spec.representation_config,
            ],
            sort_keys=True,
            default=str,
        )
        if key in seen:
            continue
        seen.add(key)
        try:
            task = get_task(spec.task)
            task.check_preset(spec.preset)
            if task.configure is not None:
                task.configure(spec.preset, list(spec.overrides))
            if spec.representation != "none":
                check_representation(spec.representation, dict(spec.representation_config))
        except (KeyError, ValueError, TypeError) as error:
            raise UsageError(f"{spec.task}: {_one_line(error)}") from None


def _wandb(args: argparse.Namespace, group: str) -> WandbOptions | None:
    return WandbOptions(project=args.wandb, group=group) if args.wandb else None


def _describe(spec: RunSpec) -> str:
    if spec.representation == "none":
        return f"{spec.task} baseline seed={spec.seed}"
    mix = "LastOnly" if spec.mix.mode == "last" else f"λ={spec.mix.lam:g}"
    return f"{spec.task} {spec.representation} {mix} {'+'.join(spec.sites)} seed={spec.seed}"


def _run_all(specs: Sequence[RunSpec], args: argparse.Namespace, group: str) -> ResultsStore:
    """Run every spec not yet stored, one progress line per run; failures end in exit 1."""
    from experiments.runner import RunOptions, run_spec

    validate_specs(specs)  # before anything is created: a mistake costs no run
    in_workers = args.executor == "ray" or args.max_parallel > 1
    options = RunOptions(
        work_root=args.work,
        cache_dir=args.cache if args.cache is not None else cache_root() / "features",
        device=args.device,
        precision=args.precision,
        # worker processes report one line per evaluation: their bars would interleave
        progress=not args.quiet and not in_workers,
        wandb=_wandb(args, group),
        threads=args.threads or None,
        eval_lines=not args.quiet and in_workers,
        max_skipped=args.max_skipped,
        cache_budget=args.cache_budget,
        fresh=getattr(args, "rerun", False),
    )
    store = ResultsStore(args.store)
    unique = list({s.run_id: s for s in specs}.values())
    count = {"n": 0}

    def on_event(status: str, spec: RunSpec, detail: str) -> None:
        count["n"] += 1
        line = f"[{count['n']}/{len(unique)}] {status:6s} {spec.run_id} {_describe(spec)}"
        if status in ("done", "stored", "stale"):
            metrics = store.get(spec.run_id).metrics
            line += "  " + " ".join(f"{k}={v:.4f}" for k, v in sorted(metrics.items()))
        print(line + (f"  {detail}" if detail else ""), file=sys.stderr, flush=True)

    ray_options = {"num_cpus": args.cpus_per_run, "num_gpus": args.gpus_per_run}
    identify = functools.partial(
        run_identity, device=args.device, precision=args.precision, threads=options.threads
    )
    try:
        result = run_sweep(
            unique,
            functools.partial(run_spec, options=options),
            store,
            args.executor,
            args.address,
            max_parallel=args.max_parallel,
            ray_options=ray_options if args.executor == "ray" else None,
            on_event=on_event,
            identify=identify,
            reuse=_reuse_policy(args),
        )
    except DeviceError as error:
        raise UsageError(_one_line(error)) from None
    if result.superseded:
        print(
            f"{len(result.superseded)} stale record(s) trained again and replaced; the old ones "
            f"are kept under {store.root}/<task>/superseded/",
            file=sys.stderr,
        )
    return store


def _reuse_policy(args: argparse.Namespace) -> Reuse:
    if getattr(args, "rerun", False):
        return "never"
    return "stale" if getattr(args, "reuse_stale", False) else "matching"


def _base(args: argparse.Namespace, task: str) -> RunSpec:
    splits = ("dev", "test") if args.eval_split == "test" else ("dev",)
    overrides = _task_overrides(args)
    try:
        return named.base_spec(task, args.config, args.data, _run_config(args), overrides, splits)
    except (KeyError, ValueError) as error:
        raise UsageError(_one_line(error)) from None


def _grid_table(
    task: str, specs: Sequence[RunSpec], seeds: tuple[int, ...], split: str
) -> TableSpec:
    """One row per grid point (seeds averaged), one column: the task's main metric."""
    points: dict[str, RunSpec] = {}
    for spec in specs:
        point = derive(spec, {"seed": seeds[0]})
        points.setdefault(point.run_id, point)
    first = named.rows(task, next(iter(points.values())), split)[0]
    rows = tuple(
        Row(_describe(p).rsplit(" seed=", 1)[0], p, first.metric, paper_key=None)
        for p in points.values()
    )
    column = RunsColumn(f"{split} {first.metric.label or first.metric.key}", {})
    return TableSpec(
        f"sweep-{task}", f"Sweep over {task} ({split}; seeds {seeds})", rows, (column,), seeds
    )


def _current_records(
    tables: Sequence[TableSpec], records: Sequence[RunRecord], reuse_stale: bool
) -> tuple[list[RunRecord], frozenset[str]]:
    """The records the tables may use (:func:`experiments.identity.current_records` over the
    tables' runs), and the stale ones among them; prints the runs left out."""
    wanted = {s.run_id for t in tables for s in named.expected_specs(t)}
    found = current_records(records, reuse_stale, only=wanted)
    if found.left_out:
        print(
            f"{len(found.left_out)} stored run(s) left out of the tables: what they were made "
            "from no longer matches (rerun the command to train them again, or pass "
            "--reuse-stale):",
            file=sys.stderr,
        )
        for rid, why in sorted(found.left_out.items()):
            print(f"  {rid}: {why}", file=sys.stderr)
    return found.kept, found.stale


def _write_tables(
    tables: Sequence[TableSpec],
    store: ResultsStore,
    out: Path,
    stem: str,
    fmt: str,
    task: str | None = None,
    reuse_stale: bool = False,
) -> list[Path]:
    written = []
    (out / "tables").mkdir(parents=True, exist_ok=True)
    paper = load_paper()
    records, stale = _current_records(tables, store.records(task), reuse_stale)

    def attachment(run_id: str, name: str) -> str | None:
        folder = store.path_of(run_id)
        path = folder / name if folder is not None else None
        return path.read_text(encoding="utf-8") if path is not None and path.is_file() else None

    for table in tables:
        text = render(
            table,
            records,
            paper,
            fmt=fmt,  # type: ignore[arg-type]
            attachments=attachment,
            stale=stale,
        )
        path = out / "tables" / f"{stem}-{table.name}.{FORMATS[fmt]}"
        path.write_text(text, encoding="utf-8")
        written.append(path)
        print(text)
    return written + _plots(tables, records, out / "plots", stem)


def _plots(
    tables: Sequence[TableSpec], records: Sequence[RunRecord], out: Path, stem: str
) -> list[Path]:
    """Learned layer weights per site and dev learning curves of the tables' runs (PNG)."""
    try:
        from experiments.plots import plot_layer_weights, plot_learning_curves
    except ImportError:
        return []
    from tasks.registry import get_task

    wanted = {s.run_id for t in tables for s in named.expected_specs(t)}
    runs = [r for r in records if r.run_id in wanted]
    written: list[Path] = []
    if not runs:
        return written
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted({r.spec.representation for r in runs} - {"none"}):
        mine = [r for r in runs if r.spec.representation == name]  # one layer count each
        tag = "" if name == "elmo" else "-" + "".join(c if c.isalnum() else "_" for c in name)
        written.append(plot_layer_weights(mine, out / f"{stem}{tag}-layer-weights.png"))
    written += _figure2(tables, runs, out, stem)
    for task in sorted({r.spec.task for r in runs}):
        metric = get_task(task).metric
        mine = [r for r in runs if r.spec.task == task]
        path = out / f"{stem}-{task}-learning-curves.png"
        written.append(plot_learning_curves(mine, path, f"dev_{metric.key}", scale=metric.scale))
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return written


def _figure2(
    tables: Sequence[TableSpec], runs: Sequence[RunRecord], out: Path, stem: str
) -> list[Path]:
    """Paper Figure 2 for tables of several tasks: the learned softmax weights of each row's
    ELMo configuration (its base spec, mean over seeds), one heat map per site."""
    from experiments.plots import layer_weights, plot_layer_weights_figure

    by_id = {r.run_id: r for r in runs}
    weights: dict[str, dict[str, list[float]]] = {}
    for table in tables:
        for row in table.rows:
            task = row.label.split(" (")[0]
            seeds = row.seeds if row.seeds is not None else table.seeds
            found = [
                by_id[i]
                for i in (derive(row.base, {"seed": s}).run_id for s in seeds)
                if i in by_id
            ]
            if task not in weights and found and row.base.representation == "elmo":
                weights[task] = {k: list(v.mean) for k, v in layer_weights(found).items()}
    if len(weights) < 2:
        return []
    data = " [DEMO data]" if tables[0].rows[0].base.data == "demo" else ""
    path = out / f"{stem}-figure2-layer-weights.png"
    return [plot_layer_weights_figure(weights, path, f"Learned layer weights{data}")]


def _label(data: str) -> str:
    return "demo" if data == "demo" else Path(data).name


def _tasks_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tasks",
        type=_list,
        help="rows of a whole table: comma-separated registered task names (default: table1 "
        "every task; table2, table3 and cove the tasks of the paper's table)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line (``python -m experiments --help``)."""
    from tasks.registry import TASKS

    parser = _Parser(
        prog="python -m experiments",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    tasks = sorted(TASKS)
    run = sub.add_parser("run", help="train one configuration over seeds")
    run.add_argument("task", choices=tasks)
    run.add_argument("--repr", default="elmo", help="elmo | bilm-random | glove | cove | none")
    run.add_argument("--sites", help="comma-separated (default: the task's, from the paper)")
    run.add_argument("--mode", default=None, choices=("all", "last"))
    run.add_argument("--lam", type=float, default=None)
    run.add_argument("--layer-norm", action="store_true")
    run.add_argument(
        "--dropout", type=float, help="on the mixed vectors (default: the task's, paper §3.3)"
    )
    run.add_argument("--state", default="reset", choices=("reset", "carry", "warm"))
    run.add_argument("--limit", type=int, help="first N examples of each split (smoke runs)")
    run.add_argument("--max-epochs", type=int, help="epoch budget (default: the preset's)")
    _common(run)
    sweep = sub.add_parser("sweep", help="a grid of runs, then a table of the grid")
    sweep.add_argument("task", choices=tasks)
    sweep.add_argument("--repr", type=_list, default=("elmo",), help="e.g. elmo,bilm-random,cove")
    sweep.add_argument("--mode", type=_list, default=None, help="all,last")
    sweep.add_argument("--lam", type=_floats, default=None, help="e.g. 0,0.001,1")
    sweep.add_argument("--sites", type=_sites, default=None, help="e.g. input,input+output,output")
    sweep.add_argument("--state", default="reset", choices=("reset", "carry", "warm"))
    sweep.add_argument("--limit", type=int, help="first N examples of each split (smoke runs)")
    sweep.add_argument("--max-epochs", type=int, help="epoch budget (default: the preset's)")
    _common(sweep)
    rep = sub.add_parser("reproduce", help="run and render a named table")
    rep.add_argument("name", choices=sorted(named.reproductions()))
    _tasks_option(rep)
    _common(rep, seeds=None)
    ren = sub.add_parser("render", help="render a named table from stored runs only")
    ren.add_argument("name", choices=sorted(named.reproductions()))
    ren.add_argument("--format", default="markdown", choices=tuple(FORMATS))
    _tasks_option(ren)
    _common(ren, train=False, seeds=None)
    cmp = sub.add_parser(
        "compare", help="a new representation beside ELMo on the tasks, with significance"
    )
    cmp.add_argument(
        "--repr",
        required=True,
        help="the new representation: a registered name (bilm-random, glove, ...) or "
        "package.module:Factory importable from PYTHONPATH (docs/representations.md)",
    )
    cmp.add_argument(
        "--repr-set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="the new representation's options; values are JSON when they parse (dim=64)",
    )
    cmp.add_argument(
        "--against", default="elmo", help="the reference: elmo (default), none, or a name"
    )
    _tasks_option(cmp)
    _common(cmp, seeds=None)
    eff = sub.add_parser(
        "sample-efficiency",
        help="paper Figure 1: baseline vs ELMo on 0.1 %%–100 %% of the training set",
    )
    eff.add_argument(
        "--fractions",
        type=_floats,
        help="shares of the training set (default: the figure's 0.001,0.01,0.1,1)",
    )
    eff.add_argument(
        "--tasks", type=_list, help="tasks (default: the figure's, paper.toml; any task works)"
    )
    _common(eff, seeds=None)
    from experiments import report

    report.add_arguments(
        sub.add_parser("report", help="one self-contained HTML page of every table and plot")
    )
    from experiments import neighbours, probes

    probes.add_arguments(
        sub.add_parser("probes", help="per-layer POS and word-sense probes (paper Tables 5-6)")
    )
    neighbours.add_arguments(
        sub.add_parser("neighbours", help="GloVe vs biLM nearest neighbours (paper Table 4)")
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = build_parser().parse_args(argv)
    try:
        return _command(args)
    except SweepError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except UsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _command(args: argparse.Namespace) -> int:
    if getattr(args, "executor", None) == "ray" and args.address is None:
        os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    if args.command in ("run", "sweep"):
        return _train_command(args)
    if args.command == "compare":
        return _compare_command(args)
    if args.command == "sample-efficiency":
        return _sample_efficiency_command(args)
    if args.command in ("report", "probes", "neighbours"):
        module = importlib.import_module(f"experiments.{args.command}")
        return int(module.main(args))
    cove = _run_config(args, "cove") if getattr(args, "cove", None) else None
    try:
        tables = named.tables(
            args.name,
            args.config,
            args.data,
            args.seeds,  # None: each row its task's seeds
            _run_config(args),
            _task_overrides(args),
            args.eval_split,
            cove,
            args.tasks,
        )
    except (KeyError, ValueError) as error:
        print(f"error: {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    if (args.name == "cove" or args.name.endswith("_cove")) and cove is None:
        print(named.COVE_MISSING, file=sys.stderr)
    stem = f"{args.name}-{args.config}-{_label(args.data)}"
    if args.command == "reproduce":
        _run_all([s for t in tables for s in named.expected_specs(t)], args, group=stem)
    fmt = getattr(args, "format", "markdown")
    written = _write_tables(
        tables, ResultsStore(args.store), args.out, stem, fmt, reuse_stale=args.reuse_stale
    )
    if args.wandb:
        from experiments.wandb_sink import log_artifacts

        log_artifacts(WandbOptions(project=args.wandb, group=stem), written, name=stem)
    return 0


def _options(pairs: Sequence[str]) -> dict[str, object]:
    """``KEY=VALUE`` pairs → options; a value is JSON when it parses, else a string."""
    options: dict[str, object] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise ValueError(f"--repr-set takes KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def _compare_command(args: argparse.Namespace) -> int:
    """``compare``: check both representations (no run starts on a bad name or option), run
    the table's missing runs, render it with the learned layer weights of both."""
    from tasks.representations import check_representation

    def config(name: str, extra: dict[str, object]) -> dict[str, object]:
        registered = name in ("elmo", "bilm-random", "glove", "cove")
        return {**(_run_config(args, name) if registered else {}), **extra}

    try:
        new = (args.repr, config(args.repr, _options(args.repr_set)))
        against = (args.against, config(args.against, {}))
        for name, options in (new, against):
            if name != "none":
                check_representation(name, options)
        table = named.compare_table(
            new,
            against,
            args.config,
            args.data,
            args.seeds,
            _run_config(args),
            _task_overrides(args),
            args.eval_split,
            args.tasks,
        )
    except (KeyError, ValueError, TypeError) as error:
        print(f"error: {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in args.repr)
    stem = f"compare-{safe}-vs-{args.against}-{args.config}-{_label(args.data)}"
    store = _run_all(named.expected_specs(table), args, group=stem)
    lines = named.weights_lines(table, store.records())
    table = dataclasses.replace(table, caption=(*table.caption, *lines))
    written = _write_tables(
        [table], store, args.out, stem, "markdown", reuse_stale=args.reuse_stale
    )
    if args.wandb:
        from experiments.wandb_sink import log_artifacts

        log_artifacts(WandbOptions(project=args.wandb, group=stem), written, name=stem)
    return 0


def _sample_efficiency_command(args: argparse.Namespace) -> int:
    """``sample-efficiency``: the runs of Figure 1, its table (ELMo tested against the baseline
    at every share) and one plot per task."""
    try:
        table = named.sample_efficiency_table(
            args.config,
            args.data,
            args.seeds,
            _run_config(args),
            args.fractions,
            _task_overrides(args),
            args.tasks,
        )
    except (KeyError, ValueError) as error:
        print(f"error: {error.args[0] if error.args else error}", file=sys.stderr)
        return 2
    stem = f"sample-efficiency-{args.config}-{_label(args.data)}"
    store = _run_all(named.expected_specs(table), args, group=stem)
    written = _write_tables(
        [table], store, args.out, stem, "markdown", reuse_stale=args.reuse_stale
    )
    written += _efficiency_plots(table, store.records(), args.out / "plots", stem)
    if args.wandb:
        from experiments.wandb_sink import log_artifacts

        log_artifacts(WandbOptions(project=args.wandb, group=stem), written, name=stem)
    return 0


def _efficiency_plots(
    table: TableSpec, records: Sequence[RunRecord], out: Path, stem: str
) -> list[Path]:
    """One Figure 1 plot per task: dev metric vs share of the training set, both systems."""
    try:
        from experiments.plots import plot_sample_efficiency, sample_efficiency_curves
    except ImportError:
        return []
    from tasks.registry import get_task

    wanted = {s.run_id for s in named.expected_specs(table)}
    runs = [r for r in records if r.run_id in wanted]
    written = []
    for task in sorted({r.spec.task for r in runs}):
        metric = get_task(task).metric
        curves = sample_efficiency_curves(runs, task, f"dev_{metric.key}", scale=metric.scale)
        path = out / f"{stem}-{task}.png"
        out.mkdir(parents=True, exist_ok=True)
        title = f"{task}: baseline vs ELMo by training-set share" + (
            " (DEMO data)" if table.rows[0].base.data == "demo" else ""
        )
        written.append(plot_sample_efficiency(curves, path, title, metric.label or metric.key))
        print(f"wrote {path}", file=sys.stderr)
    return written


def _train_specs(args: argparse.Namespace) -> tuple[list[RunSpec], str]:
    """The specs of ``run`` / ``sweep`` and their group name.

    Raises:
        UsageError, KeyError, ValueError: an invalid option value.
    """
    base = _base(args, args.task)
    changes: dict[str, object] = {"state": args.state, "limit": args.limit}
    if args.max_epochs is not None:
        changes["max_epochs"] = args.max_epochs
    base = derive(base, changes)
    if args.command == "run":
        axes: dict[str, list[object]] = {"seed": list(args.seeds)}
        if args.repr == "none":
            base = named.baseline(base)
        else:
            point: dict[str, object] = {
                "representation": args.repr,
                "representation_config": _run_config(args, args.repr),
            }
            if args.dropout is not None:
                point["dropout"] = args.dropout
            if args.sites:
                point["sites"] = _list(args.sites)
            if args.mode:
                point["mode"] = args.mode
            if args.lam is not None:
                point["lam"] = args.lam
            if args.layer_norm:
                point["layer_norm"] = True
            base = derive(base, point)
        specs = expand_sweep(base, **axes)
        group = f"run-{args.task}-{base.run_id}"
    else:
        grid: dict[str, list[object]] = {}
        if args.mode:
            grid["mode"] = list(args.mode)
        if args.lam is not None:
            grid["lam"] = list(args.lam)
        if args.sites:
            grid["sites"] = list(args.sites)
        specs = []
        for rep in args.repr:
            if rep == "none":
                specs += expand_sweep(named.baseline(base), seed=list(args.seeds))
            else:
                point = derive(
                    base, {"representation": rep, "representation_config": _run_config(args, rep)}
                )
                specs += expand_sweep(point, **grid, seed=list(args.seeds))
        group = f"sweep-{args.task}-{_label(args.data)}-{len(specs)}runs"
    return list(specs), group


def _train_command(args: argparse.Namespace) -> int:
    try:  # a bad --sites, --lam, --dropout, ... is a command-line mistake: no run starts
        specs, group = _train_specs(args)
    except (KeyError, ValueError) as error:
        raise UsageError(_one_line(error)) from None
    store = _run_all(specs, args, group)
    if args.command == "run":
        for spec in specs:
            metrics = store.get(spec.run_id).metrics
            print(json.dumps({"run_id": spec.run_id, "seed": spec.seed, **metrics}))
        return 0
    table = _grid_table(args.task, specs, tuple(args.seeds), args.eval_split or "dev")
    stem = group
    written = _write_tables(
        [table], store, args.out, stem, "markdown", task=args.task, reuse_stale=args.reuse_stale
    )
    if args.wandb:
        from experiments.wandb_sink import log_artifacts

        log_artifacts(WandbOptions(project=args.wandb, group=group), written, name=stem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
