"""Task training speed: one training epoch and one evaluation of every task's presets, with the
time split into the loop's phases.

Usage::

    python benchmarks/bench_tasks.py [--tasks squad,ner] [--presets mini,paper]
        [--features cached,live] [--batches 10] [--repeats 3] [--device cpu,cuda]
        [--threads 1] [--json PATH] [--out FILE] [--quick] [--list]

For each task and preset the task's own recipe is set up (its DEMO vocabularies, its preset's
model and :class:`~tasks.core.TrainConfig`), then its splits are replaced by **fixed synthetic
data of realistic size** (seed 0, words drawn from the recipe's vocabulary) that the task's own
builder draws (``TaskSpec.synthetic``, the task folder's ``synthetic.py``: e.g. SQuAD paragraphs
of 100-180 tokens with four questions of 7-15 tokens, coreference documents of 20 sentences with
clusters of 3+ mentions); a task without one is listed as not timed, a preset a task lacks is
left out. ``--list`` prints the settings without measuring. Each timed pass is one training epoch of
``--batches`` batches of the preset's batching (the loop's own batch plan, seeded as epoch 0),
then one evaluation of as many dev batches through the loop's model selection step (EMA weights
when the preset has EMA, the task's official-parity scorer).

The loop's components run as in ``python -m experiments run``: the recipe's ``collate``, the
run's set-up (:func:`experiments.run.setup.set_up`: representation through the feature cache or
live, model, optimizer), the runner's ``_train_batch`` (autocast, loss + λ penalty, non-finite
guard, backward, clipping, optimizer step, EMA) and the dev scoring of model selection
(:func:`experiments.run.scoring.score_dev`). Hooks on the model and the optimizer mark where each
phase starts, so the split is measured on that code (on CUDA every mark waits for the device):

* training: ``batch`` (collate without the representation: ids, padding, labels),
  ``repr`` (cache lookup, or featurize + the live biLM), ``h2d`` (the batch to the device),
  ``forward`` (model and loss), ``backward`` (penalty, backward, clipping, gradient norm),
  ``optim`` (optimizer step), ``other`` (EMA, grad scaler, loss read-back);
* evaluation: ``batch``, ``repr``, ``forward``, ``decode`` (moving batches, reading outputs
  back, turning them into predictions, the EMA swap and the weights copy of model selection),
  ``score`` (the official-parity scorer).

Representations: ``mini`` uses the shipped small biLM, ``paper`` a full-size biLM
(``BiLMOptions()`` defaults, random weights seed 0: nothing is downloaded), each either through
the feature cache (``cached``; built once before timing, its build time printed) or live in every
batch (``live``). On the CPU the paper preset runs at most ``--paper-cpu-batches`` batches (2):
the full-size biLM costs seconds a batch there, and the cache build would cost as much. The
paper preset's fine-tuning of the biLM on the task's text is not part of an epoch and is not
run; random vectors of the preset's width stand in for the files it must be given (GloVe 840B,
6B 100-d, Turian: ``Synthetic.stand_ins``).

Printed: examples/s of the epoch and of the evaluation, tokens the representation reads per
batch, and each phase's share (medians over ``--repeats`` passes, after one warm-up batch).
Timings on a shared machine are noisy: compare shares, and rerun with ``nice -n 19`` off-peak.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import machine_info, provenance, write_json  # noqa: E402
from bilm import BiLMOptions  # noqa: E402
from bilm.devices import (  # noqa: E402
    describe_device,
    resolve_device,
    resolve_precision,
    synchronize,
)
from experiments.run import runner, scoring  # noqa: E402
from experiments.run.resolve import resolve  # noqa: E402
from experiments.run.setup import Run, RunData, RunOptions, seed_everything, set_up  # noqa: E402
from experiments.run.spec import RunSpec  # noqa: E402
from tasks.core import Represent, TaskRecipe, TaskSpec, batch_plan  # noqa: E402
from tasks.registry import TASKS, get_task  # noqa: E402

#: This script's path as the ``--out`` header's command names it.
SCRIPT = "benchmarks/bench_tasks.py"
PRESETS = ("mini", "paper")
FEATURES = ("cached", "live")
TRAIN_PHASES = ("batch", "repr", "h2d", "forward", "backward", "optim", "other")
EVAL_PHASES = ("batch", "repr", "forward", "decode", "score")


# --------------------------------------------------------------------------- synthetic data
def synthetic_splits(task: str, recipe: Any, batches: int, seed: int = 0) -> dict[str, list[Any]]:
    """``train`` and ``dev`` of synthetic examples, each filling ``batches`` batches of the
    recipe's batching (examples or documents; a token budget gets as many examples as fit).

    Args:
        task: a registered task with a synthetic builder (``TaskSpec.synthetic``).
        recipe: the task's recipe (its vocabulary and labels are used; a builder may replace
            what its scorer reads beside the examples, as SRL's sentences).
        batches: batches per split.
        seed: the generator's seed (the data are a function of it).

    Raises:
        ValueError: the task declares no synthetic builder.
    """
    synthetic = get_task(task).synthetic
    if synthetic is None:
        raise ValueError(f"task {task!r} declares no synthetic data (TaskSpec.synthetic)")
    config = recipe.train_config
    rng = random.Random(seed)
    splits: dict[str, list[Any]] = {}
    for split in ("train", "dev"):
        if config.batching == "document":
            count = batches
        elif config.batching == "examples":
            count = batches * config.batch_size
        else:  # a token budget: at least `batches` budgets' worth of the shortest examples
            count = batches * max(1, config.batch_size // 8)
        splits[split] = synthetic.examples(recipe, split, count, rng)
    return splits


# --------------------------------------------------------------------------- measuring
class Clock:
    """Seconds per phase, summed; on CUDA every reading waits for the device first."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seconds: dict[str, float] = defaultdict(float)

    def now(self) -> float:
        """The time after the device's queued work."""
        synchronize(self.device)
        return time.perf_counter()

    def add(self, phase: str, seconds: float) -> None:
        self.seconds[phase] += seconds


@dataclass
class _Marks:
    """The last time each hook fired (``None``: it did not fire in this step)."""

    times: dict[str, float] = field(default_factory=dict)

    def pop(self, name: str) -> float | None:
        return self.times.pop(name, None)


@contextlib.contextmanager
def _hooks(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, clock: Clock
) -> Iterator[_Marks]:
    """Marks at the model's forward start/end and the optimizer step's start/end; the forward
    time is added to ``clock`` as ``forward``."""
    marks = _Marks()

    def forward_start(*_: Any) -> None:
        marks.times["forward_start"] = clock.now()

    def forward_end(*_: Any) -> None:
        end = clock.now()
        marks.times["forward_end"] = end
        clock.add("forward", end - marks.times.get("forward_start", end))

    def step_start(*_: Any) -> None:
        marks.times["step_start"] = clock.now()

    def step_end(*_: Any) -> None:
        marks.times["step_end"] = clock.now()

    handles = [
        model.register_forward_pre_hook(forward_start),
        model.register_forward_hook(forward_end),
        optimizer.register_step_pre_hook(step_start),
        optimizer.register_step_post_hook(step_end),
    ]
    try:
        yield marks
    finally:
        for handle in handles:
            handle.remove()


def _timed_represent(represent: Represent, clock: Clock) -> Represent:
    """``represent`` adding its time to ``clock`` as ``repr``."""

    def timed(sequences: Sequence[Sequence[str]]) -> Any:
        start = clock.now()
        layers = represent(sequences)
        clock.add("repr", clock.now() - start)
        return layers

    return timed


@contextlib.contextmanager
def _timed_methods(recipe: Any, clock: Clock, names: Sequence[str]) -> Iterator[None]:
    """The recipe's methods ``names`` adding their time to ``clock`` under their own names
    (instance attributes shadow the methods; removed on exit)."""
    for name in names:
        method = getattr(recipe, name)

        def timed(*args: Any, _method: Callable[..., Any] = method, _name: str = name) -> Any:
            start = clock.now()
            out = _method(*args)
            clock.add(_name, clock.now() - start)
            return out

        setattr(recipe, name, timed)
    try:
        yield
    finally:
        for name in names:
            delattr(recipe, name)


@dataclass
class Setting:
    """One measured configuration.

    Attributes:
        task: registry name.
        preset: ``mini`` or ``paper``.
        features: ``cached`` or ``live``.
        device: where the model runs.
        batches: training (and dev) batches per pass.
        note: why fewer batches than asked run (empty when all do).
    """

    task: str
    preset: str
    features: str
    device: torch.device
    batches: int
    note: str = ""


def _spec(task: TaskSpec, preset: str, options_file: Path) -> RunSpec:
    """The run of ``task``'s ``preset`` with ELMo at the preset's sites (the named tables' ELMo
    column): the shipped small biLM for ``mini``, a full-size random one for ``paper``."""
    overrides = task.synthetic.stand_ins.get(preset, ()) if task.synthetic else ()
    if preset == "paper":
        representation, config = "bilm-random", {"options": str(options_file)}
    else:
        representation, config = "elmo", {}
    return RunSpec(
        task=task.name,
        task_version=task.version,
        representation=representation,
        representation_config=config,
        sites=tuple(sorted(task.sites_for(preset))),  # type: ignore[arg-type]
        mix=task.default_mix,
        dropout=task.elmo_dropout_for(preset),
        preset=preset,
        overrides=overrides,
    )


def _build(setting: Setting, root: Path, precision: str) -> tuple[Run, dict[str, float]]:
    """The run's objects over synthetic splits (:func:`experiments.run.setup.set_up` with them as
    its data), and the set-up seconds (``cache build``: the feature cache, ``cached`` only)."""
    task = get_task(setting.task)
    options_file = root / "full_size_options.json"
    if not options_file.exists():
        BiLMOptions().to_json(options_file)
    spec = _spec(task, setting.preset, options_file)
    resolved = resolve(spec)
    seed_everything(spec.seed)
    recipe = task.setup(setting.preset, list(spec.overrides), None)
    splits = synthetic_splits(setting.task, recipe, setting.batches, spec.seed)
    recipe.splits = splits  # type: ignore[misc]
    cache = root / "cache" if setting.features == "cached" else None
    options = RunOptions(
        work_root=root / "work",
        cache_dir=cache,
        device=str(setting.device),
        precision=precision,
        progress=False,
    )
    started = time.perf_counter()
    run = set_up(resolved, options, RunData(recipe, recipe.train_config, splits))
    built = time.perf_counter() - started  # the representation (and its cache), model, optimizer
    return run, ({"cache build": built} if cache is not None else {})


def _sizes(recipe: TaskRecipe, examples: Sequence[Any]) -> int:
    """Tokens the representation reads for ``examples``."""
    return sum(len(s) for s in recipe.sequences(examples))


def train_epoch(run: Run, state: Any, plan: Sequence[Sequence[int]]) -> dict[str, float]:
    """One epoch of ``plan`` through the runner's step; seconds per training phase and
    ``total``."""
    clock = Clock(run.device)
    represent = _timed_represent(run.represent, clock)
    train = run.splits["train"]
    run.model.train()
    with _hooks(run.model, run.optimizer, clock) as marks:
        started = clock.now()
        for indices in plan:
            start = clock.now()
            batch = run.recipe.collate([train[i] for i in indices], represent)
            collated = clock.now()
            clock.add("batch", collated - start)
            runner._train_batch(run, state, batch)
            end = clock.now()
            forward_start = marks.pop("forward_start") or collated
            forward_end = marks.pop("forward_end") or forward_start
            step_start, step_end = marks.pop("step_start"), marks.pop("step_end")
            clock.add("h2d", forward_start - collated)
            clock.add("backward", (step_start or end) - forward_end)
            if step_start is not None and step_end is not None:
                clock.add("optim", step_end - step_start)
                clock.add("other", end - step_end)
        total = clock.now() - started
    seconds = dict(clock.seconds)
    seconds["batch"] = seconds.get("batch", 0.0) - seconds.get("repr", 0.0)
    return {**{p: seconds.get(p, 0.0) for p in TRAIN_PHASES}, "total": total}


def evaluate(run: Run) -> dict[str, float]:
    """One dev evaluation as model selection runs it (EMA weights, predictions, the scorer,
    the weights copy); seconds per evaluation phase and ``total``."""
    clock = Clock(run.device)
    run_represent = run.represent
    run.represent = _timed_represent(run_represent, clock)
    try:
        with (
            _hooks(run.model, run.optimizer, clock),
            _timed_methods(run.recipe, clock, ("collate", "score")),
        ):
            started = clock.now()
            scoring.score_dev(run)
            total = clock.now() - started
    finally:
        run.represent = run_represent
    s = clock.seconds
    decode = total - s["collate"] - s["forward"] - s["score"]
    phases = {
        "batch": s["collate"] - s["repr"],
        "repr": s["repr"],
        "forward": s["forward"],
        "decode": decode,
        "score": s["score"],
    }
    return {**phases, "total": total}


def _warm_up(run: Run, state: Any, plan: Sequence[Sequence[int]]) -> None:
    """One training step and one scored prediction batch, untimed (allocations, lazy imports
    such as the NER scorer's seqeval)."""
    train, dev = run.splits["train"], run.splits["dev"]
    run.model.train()
    runner._train_batch(run, state, run.recipe.collate([train[i] for i in plan[0]], run.represent))
    run.model.eval()
    first = batch_plan([run.recipe.size(e) for e in dev], run.train_config, None)[0]
    chunk = [dev[i] for i in first]
    run.recipe.score(run.recipe.predict(run.forward, chunk, run.represent), chunk)
    run.model.train()


def measure(setting: Setting, root: Path, precision: str, repeats: int) -> dict[str, Any]:
    """Medians over ``repeats`` passes (one epoch, one evaluation) of one setting."""
    run, setup = _build(setting, root, precision)
    cfg = run.train_config
    state = runner.LoopState(lr=cfg.optimizer.lr)
    train, dev = run.splits["train"], run.splits["dev"]
    plan = batch_plan([run.recipe.size(e) for e in train], cfg, runner.epoch_seed(0, 0))
    plan = plan[: setting.batches]
    examples = sum(len(b) for b in plan)
    tokens = _sizes(run.recipe, [train[i] for b in plan for i in b])
    _warm_up(run, state, plan)
    epochs, evals = [], []
    for _ in range(repeats):
        epochs.append(train_epoch(run, state, plan))
        evals.append(evaluate(run))
    train_s = {k: statistics.median(e[k] for e in epochs) for k in epochs[0]}
    eval_s = {k: statistics.median(e[k] for e in evals) for k in evals[0]}
    return {
        "task": setting.task,
        "preset": setting.preset,
        "features": setting.features,
        "device": describe_device(setting.device),
        "batches": len(plan),
        "note": setting.note,
        "train_examples": examples,
        "dev_examples": len(dev),
        "tokens_per_batch": tokens / len(plan),
        "train_examples_per_s": examples / train_s["total"],
        "eval_examples_per_s": len(dev) / eval_s["total"],
        "train_seconds": train_s,
        "eval_seconds": eval_s,
        "setup_seconds": setup,
        "skipped_steps": state.skipped,
    }


# --------------------------------------------------------------------------- report
def shares(seconds: dict[str, float], phases: Sequence[str]) -> list[float]:
    """Each phase's percentage of ``seconds["total"]`` (0 for an empty total)."""
    total = seconds["total"]
    return [100.0 * seconds[p] / total if total > 0 else 0.0 for p in phases]


def _row(result: dict[str, Any]) -> str:
    head = (
        f"{result['task']:<6} {result['preset']:<5} {result['features']:<6} "
        f"{result['batches']:>3} {result['tokens_per_batch']:>7.0f} "
        f"{result['train_examples_per_s']:>8.1f} {result['eval_examples_per_s']:>8.1f} |"
    )
    train = "".join(f"{v:>9.1f}" for v in shares(result["train_seconds"], TRAIN_PHASES))
    evals = "".join(f"{v:>9.1f}" for v in shares(result["eval_seconds"], EVAL_PHASES))
    return f"{head}{train} |{evals}"


def _header() -> list[str]:
    train = "".join(f"{p:>9}" for p in TRAIN_PHASES)
    evals = "".join(f"{p:>9}" for p in EVAL_PHASES)
    return [
        f"{'':<20} {'':>3} {'tokens':>7} {'train':>8} {'eval':>8} |"
        f"{'training epoch, % of time':^63} |{'evaluation, % of time':^45}",
        f"{'task   preset feats':<20} {'bat':>3} {'/batch':>7} {'ex/s':>8} {'ex/s':>8} |"
        f"{train} |{evals}",
    ]


def _settings(args: argparse.Namespace, device: torch.device) -> list[Setting]:
    """Every (task, preset, features) to measure: the presets each task has, the tasks that
    declare synthetic data (:func:`untimed` lists the others)."""
    out = []
    for name in args.tasks:
        task = get_task(name)
        if task.synthetic is None:
            continue
        for preset in (p for p in args.presets if p in task.presets):
            batches, note = args.batches, ""
            if preset == "paper" and device.type == "cpu" and batches > args.paper_cpu_batches:
                batches = args.paper_cpu_batches
                note = f"paper on CPU: {batches} of {args.batches} batches (full-size biLM)"
            for features in args.features:
                out.append(Setting(name, preset, features, device, batches, note))
    return out


def untimed(args: argparse.Namespace) -> list[str]:
    """One line per asked task or preset that is not measured, and why."""
    lines = []
    for name in args.tasks:
        task = get_task(name)
        if task.synthetic is None:
            lines.append(f"{name}: not timed (it declares no synthetic data: TaskSpec.synthetic)")
            continue
        lacking = [p for p in args.presets if p not in task.presets]
        if lacking:
            lines.append(
                f"{name}: no preset {', '.join(lacking)} (it has {', '.join(task.presets)})"
            )
    return lines


def _names(text: str, known: Sequence[str], what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {unknown or text!r}; choose from {', '.join(known)}"
        )
    return names


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="all", help="comma list of tasks (all)")
    parser.add_argument("--presets", default="mini,paper", help="comma list (mini,paper)")
    parser.add_argument("--features", default="cached,live", help="comma list (cached,live)")
    parser.add_argument("--batches", type=int, default=10, help="batches per epoch (10)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes, median (3)")
    parser.add_argument(
        "--paper-cpu-batches", type=int, default=2, help="cap of the paper preset on CPU (2)"
    )
    parser.add_argument("--device", default="cpu,cuda", help="comma list (cpu,cuda: if present)")
    parser.add_argument("--precision", default="fp32", help="fp32 | bf16 | fp16 (fp32)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1, as runs)")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument(
        "--out",
        type=Path,
        help="also write the printed report to this file, after a header naming the commit, "
        "the CPU and the command",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 batches, 1 repeat")
    parser.add_argument(
        "--list", action="store_true", help="print the settings it would measure, then stop"
    )
    args = parser.parse_args(argv)
    try:
        args.tasks = list(TASKS) if args.tasks == "all" else _names(args.tasks, list(TASKS), "task")
        args.presets = _names(args.presets, PRESETS, "preset")
        args.features = _names(args.features, FEATURES, "features")
        args.devices = _names(args.device, ("cpu", "cuda", "auto"), "device")
        if min(args.batches, args.repeats, args.paper_cpu_batches, args.threads) < 1:
            raise argparse.ArgumentTypeError(
                "--batches, --repeats, --paper-cpu-batches and --threads must be >= 1"
            )
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))  # one line, exit 2
    if args.quick:
        args.batches, args.repeats = 2, 1
        args.paper_cpu_batches = min(args.paper_cpu_batches, 2)
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure, print the tables, write ``--json`` / ``--out``; returns the report."""
    args = parse_args(argv)
    if args.list:
        for name in args.devices:
            if name == "cuda" and not torch.cuda.is_available():
                continue
            for setting in _settings(args, resolve_device(name)):
                print(f"{setting.task} {setting.preset} {setting.features} {setting.device}")
        for line in untimed(args):
            print(line)
        return {"machine": {}, "args": _plain_args(args), "results": []}
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)
    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    machine = machine_info()
    say(f"CPU: {machine['cpu']} ({machine['logical_cpus']} logical, {args.threads} threads)")
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench_tasks-") as tmp:
            for name in args.devices:
                if name == "cuda" and not torch.cuda.is_available():
                    say("cuda: not available, skipped")
                    continue
                device = resolve_device(name)
                precision = resolve_precision(device, args.precision)
                say(
                    f"\n[{describe_device(device)}, {precision}: one epoch of {args.batches} "
                    f"batches + one evaluation, medians of {args.repeats}]"
                )
                for line in _header():
                    say(line)
                for line in untimed(args):
                    say(f"  {line}")
                notes: list[str] = []
                for setting in _settings(args, device):
                    result = measure(setting, Path(tmp), precision, args.repeats)
                    results.append(result)
                    say(_row(result))
                    if setting.note and setting.note not in notes:
                        notes.append(setting.note)
                for note in notes:
                    say(f"  {note}")
                say(
                    "  batch: collate without the representation; repr: cache lookup or live "
                    "biLM; h2d: to the device; decode: outputs to predictions, EMA swap, "
                    "weights copy"
                )
    finally:
        torch.set_num_threads(threads)
    report = {"machine": machine, "args": _plain_args(args), "results": results}
    if args.json is not None:
        write_json(args.json, report)
    if args.out is not None:  # after a header: the commit, the CPU, the command
        header = provenance(SCRIPT, argv, ("bilm", "benchmarks", "tasks", "experiments"))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join([*header, "", *lines]) + "\n", encoding="utf-8")
    return report


def _plain_args(args: argparse.Namespace) -> dict[str, Any]:
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}


if __name__ == "__main__":
    main()
