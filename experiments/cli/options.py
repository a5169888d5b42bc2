"""Option groups of the commands, their value parsers, and the one reading of the
representations' flags (``--elmo``, ``--glove``, ``--cove``: declared with the representations'
keys, :class:`tasks.representations.ReprFlag`) into a representation's configuration.

Each ``add_*_options(parser)`` adds one family of flags; a command composes the families it
takes (``run`` and ``sweep``: data, representation, task, output, reuse and training options;
``render``: no training options). Every flag keeps one spelling, default and help text wherever
it appears.
"""

from __future__ import annotations

import argparse
import inspect
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from experiments.cli.errors import UsageError, one_line
from experiments.cli.representations import LIST_COMMAND, keys_epilog
from experiments.run.executors import EXECUTORS
from tasks.representations import REPRESENTATION_OPTIONS, ReprOption, representation_flags
from tasks.representations.elmo import PUBLISHED_PREFIX

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_STORE",
    "DEFAULT_WORK",
    "FLAG_REPRESENTATIONS",
    "PUBLISHED_PREFIX",
    "add_data_options",
    "add_output_options",
    "add_repr_set_option",
    "add_representation_options",
    "add_reuse_options",
    "add_run_family_options",
    "add_seed_option",
    "add_slurm_options",
    "add_tasks_option",
    "add_training_options",
    "budget",
    "check_options",
    "comma_list",
    "data_label",
    "flag_config",
    "floats",
    "representation_config",
    "representation_options",
    "run_config",
    "seeds",
    "share",
    "site_sets",
    "task_data",
    "task_overrides",
]

DEFAULT_STORE = Path("runs/store")
DEFAULT_WORK = Path("runs/work")
DEFAULT_OUT = Path("runs")
#: The key of a representation's configuration that ``--finetune-bilm`` gives (ELMo's).
FINETUNE = "finetune"
#: The representations with keys that flags give (``--elmo``, ``--glove``, ``--cove``), from
#: their declarations.
FLAG_REPRESENTATIONS = tuple(
    name
    for name, options in REPRESENTATION_OPTIONS.items()
    if any(o.flag is not None for o in options)
)


# ------------------------------------------------------------------------------ value parsers
def comma_list(text: str) -> tuple[str, ...]:
    """``a, b,,c`` → ``("a", "b", "c")``."""
    return tuple(s.strip() for s in text.split(",") if s.strip())


def seeds(text: str) -> tuple[int, ...]:
    """``0,1,2`` → ``(0, 1, 2)``; a range ``0-4`` → ``(0, 1, 2, 3, 4)`` (both ends included).

    Raises:
        argparse.ArgumentTypeError: no seed, or an item that is neither an integer nor a range.
    """
    found: list[int] = []
    for item in comma_list(text):
        low, dash, high = item.partition("-")  # "-1" is a seed, "0-4" a range
        try:
            first, last = (int(low), int(high)) if dash and low else (int(item), int(item))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--seeds takes comma-separated integers or a range like 0-4, got {item!r}"
            ) from None
        if first > last:
            raise argparse.ArgumentTypeError(f"--seeds range {item!r} is empty: write it low-high")
        found += range(first, last + 1)
    if not found:
        raise argparse.ArgumentTypeError("--seeds needs at least one seed, e.g. 0,1,2")
    return tuple(found)


def floats(text: str) -> tuple[float, ...]:
    """``0,0.001,1`` → ``(0.0, 0.001, 1.0)``."""
    return tuple(float(s) for s in comma_list(text))


def share(text: str) -> float:
    """A number in [0, 1] (``--max-skipped``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a share in [0, 1], got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1 (``--max-parallel``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (``--slurm-gpus-per-run``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def budget(text: str) -> str:
    """``--cache-budget``: checked while parsing (a bad value exits 2 with one line)."""
    from tasks.features.feature_cache import parse_budget

    try:
        parse_budget(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    return text


def site_sets(text: str) -> tuple[tuple[str, ...], ...]:
    """``input,input+output,output`` → one site set per comma."""
    return tuple(tuple(s for s in group.split("+") if s) for group in comma_list(text))


def data_label(data: str) -> str:
    """``demo``, ``per-task`` for a per-task ``--data`` (:func:`task_data`), or the data
    folder's name (in output file names)."""
    if data == "demo":
        return "demo"
    return PER_TASK if _per_task(data) else Path(data).name


#: The data part of the output names of a per-task ``--data`` (they also carry a hash).
PER_TASK = "per-task"
_NOT_PER_TASK = ("real",)


def _per_task(text: str) -> bool:
    """Whether a ``--data`` value names data per task: a ``.toml`` file, or ``TASK=DATA`` pairs
    (an existing folder is always one folder, whatever its name)."""
    if Path(text).is_dir():
        return False
    return text.endswith(".toml") or "=" in text


def task_data(text: str, *, sets: bool = False) -> str | dict[str, str]:
    """A ``--data`` value as a table's data (:data:`experiments.report.reproductions.Data`).

    ``demo``, ``real``, ``shared:NAME``, ``hf:NAME`` and a folder stay one label for every task,
    as before. ``TASK=DATA,TASK=DATA`` and a TOML file (``[data]`` with ``TASK = "DATA"``;
    relative folders are read from the TOML file's folder) give each task its own data; a task
    they do not name is left out of the tables. Each entry's value is what a single ``--data``
    takes (a folder, ``demo``, ``shared:NAME``), except ``real``.

    A registered set's name (:mod:`experiments.cli.data`) is a run's data: with ``sets`` it is
    kept as given, for the caller to resolve (:func:`experiments.cli.data.resolve`); without,
    it is refused (a table's rows on the sets are ``--data real`` and ``reproduce paper-data``).

    Raises:
        UsageError: an unreadable or malformed mapping, an unknown task (the message lists the
            registered tasks), a task named twice, or (without ``sets``) a set's name.
    """
    from experiments.cli.data import refuse_name

    if not _per_task(text):
        if not sets:
            refuse_name(text)
        return text
    pairs = _toml_pairs(Path(text)) if text.endswith(".toml") else _inline_pairs(text)
    from tasks.registry import TASKS

    unknown = [name for name, _ in pairs if name not in TASKS]
    if unknown:
        raise UsageError(
            f"--data names unknown task(s) {', '.join(unknown)}; registered: {', '.join(TASKS)}"
        )
    mapping: dict[str, str] = {}
    for name, value in pairs:
        if name in mapping:
            raise UsageError(f"--data names {name} twice")
        if not value or value in _NOT_PER_TASK:
            raise UsageError(
                f"--data {name}={value!r}: give a data folder, demo or shared:NAME ('real' is "
                "a row per real set: --data real)"
            )
        if not sets:
            refuse_name(value, name)
        mapping[name] = value
    if not mapping:
        raise UsageError(f"--data {text!r} names no task's data")
    return dict(sorted(mapping.items(), key=lambda item: list(TASKS).index(item[0])))


def _inline_pairs(text: str) -> list[tuple[str, str]]:
    """``ner=DIR,srl=DIR2`` → ``[("ner", "DIR"), ("srl", "DIR2")]``.

    Raises:
        UsageError: an item without ``=``.
    """
    pairs = []
    for item in comma_list(text):
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--data takes TASK=DATA,TASK=DATA (or a .toml file), got {item!r}")
        pairs.append((name.strip(), value.strip()))
    return pairs


def _toml_pairs(path: Path) -> list[tuple[str, str]]:
    """The ``[data]`` table of a TOML file, relative folders joined to the file's folder (as
    the command line would name them: relative to the same place as the file).

    Raises:
        UsageError: the file is missing or not TOML, or has no ``[data]`` table of strings.
    """
    import tomllib

    try:
        with path.open("rb") as handle:
            content = tomllib.load(handle)
    except OSError as error:
        raise UsageError(f"--data {one_line(error)}") from None
    except tomllib.TOMLDecodeError as error:
        raise UsageError(f"--data {path}: not TOML ({one_line(error)})") from None
    table = content.get("data")
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise UsageError(f'--data {path}: needs a [data] table of TASK = "FOLDER" lines')
    return [(name, _beside(path, value)) for name, value in table.items()]


def _beside(path: Path, value: str) -> str:
    """A TOML entry's data label: a relative folder joined to the TOML file's folder; ``demo``,
    ``NAME:...`` labels (``shared:``, ``hf:``), registered sets' names and absolute folders as
    written."""
    from experiments.data.real_sets import named_set

    if value == "demo" or ":" in value.split("/", 1)[0] or Path(value).is_absolute():
        return value
    if named_set(value) is not None:
        return value
    return str(path.parent / value)


# ------------------------------------------------------------------------------ option groups
def add_seed_option(parser: argparse.ArgumentParser, default: tuple[int, ...] | None) -> None:
    """``--seeds`` (``None``: each task's own seeds)."""
    shown = ",".join(map(str, default)) if default is not None else "each task's own, e.g. 0,1,2"
    parser.add_argument(
        "--seeds",
        type=seeds,
        default=default,
        help=f"comma-separated, or a range like 0-4 (default {shown})",
    )


def add_data_options(parser: argparse.ArgumentParser, sets: bool = False) -> None:
    """``--data``, ``--config`` (the preset), ``--set`` and ``--eval-split``.

    Args:
        parser: the command's parser.
        sets: the command takes registered sets by name (``run``, ``sweep``): ``--data``'s help
            lists them per task, from the registry (:func:`experiments.cli.data.names_help`).
    """
    from experiments.cli.data import names_help

    names = names_help() if sets else ""
    named = (
        f"a registered set by name ({names}), which brings its --set changes and scored "
        "split (python -m experiments data list); "
        if names
        else ""
    )
    folder = (
        "a data folder (./NAME for one named like a registered set)"
        if sets
        else "a data folder (./NAME for one named like a registered set: a set's name is data "
        "of run and sweep, python -m experiments data list)"
    )
    parser.add_argument(
        "--data",
        default="demo",
        help=named + folder + ", 'demo' (default), shared:FOLDER (below ../shared/data), "
        "hf:NAME (the Hub, where the task reads it); per task: TASK=DIR,TASK=DIR or a FILE.toml "
        'with [data] TASK = "DIR" (tables leave out the tasks it does not name); or, for compare '
        "and reproduce, 'real': a row per real set (experiments/data/real_sets.toml)",
    )
    parser.add_argument("--config", default="mini", help="the task's preset: mini (default), paper")
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


def add_representation_options(parser: argparse.ArgumentParser) -> None:
    """The flags the representations declare (:func:`tasks.representations.representation_flags`:
    ``--elmo``, ``--glove``, ``--cove``), ``--turian`` and ``--finetune-bilm``."""
    for flag in representation_flags():
        parser.add_argument(
            flag.name, nargs="+" if flag.many else None, metavar=flag.metavar, help=flag.help
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
        "before and after. The paper preset does this by default where the paper did (paper "
        "A.1; each task's finetune_presets; table captions name the tasks); 0 = never",
    )


def add_repr_set_option(
    parser: argparse.ArgumentParser, whose: str = "the representation's"
) -> None:
    """``--repr-set KEY=VALUE ...``: options of ``--repr`` (:func:`representation_options`);
    the command's ``--help`` ends with every registered representation's keys
    (:func:`experiments.cli.representations.keys_epilog`)."""
    parser.add_argument(
        "--repr-set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help=f"{whose} options, listed below (each key's type, choices and help: {LIST_COMMAND})"
        "; values are JSON when they parse (dim=64, path=f.hdf5)",
    )
    parser.epilog = keys_epilog()
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--store``, ``--out`` and ``--wandb``."""
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE, help="results store")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="tables/ and plots/ here")
    parser.add_argument("--wandb", metavar="PROJECT", help="log to W&B (offline by default)")


def add_reuse_options(parser: argparse.ArgumentParser, rerun: bool = True) -> None:
    """``--reuse-stale`` and (for commands that train) ``--rerun``, mutually exclusive, and
    ``--exclude-dead``."""
    parser.add_argument(
        "--exclude-dead",
        action="store_true",
        help="leave dead runs (constant predictions, zero gradients or a flat dev metric: "
        "docs/runs.md) out of the tables' means and tests; default: included. Either way "
        "their cells are marked (☠) and a footnote names them",
    )
    reuse = parser.add_mutually_exclusive_group()
    reuse.add_argument(
        "--reuse-stale",
        action="store_true",
        help="use stored runs even where what they were made from (data, biLM, resolved "
        "configuration, device, precision, threads, result versions) no longer matches; "
        "tables mark them (‡). Default: such runs are trained again (the old record is kept, "
        "marked superseded) and rendering leaves them out",
    )
    if rerun:
        reuse.add_argument(
            "--rerun",
            action="store_true",
            help="train every run again even when a matching record is stored (the old one "
            "is kept, marked superseded)",
        )


def add_training_options(parser: argparse.ArgumentParser) -> None:
    """Where and how runs train: device, precision, executor, threads, cache, skips."""
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    parser.add_argument("--precision", default="fp32", choices=("fp32", "bf16", "fp16"))
    parser.add_argument(
        "--executor",
        default="local",
        choices=EXECUTORS,
        help="local (default), ray, or slurm: one Slurm job per run (submitit; docs/runs.md)",
    )
    parser.add_argument("--address", help="Ray cluster address (with --executor ray)")
    parser.add_argument(
        "--max-parallel",
        type=positive_int,
        default=1,
        help="runs at once (default 1); with --executor slurm, jobs queued or running at once",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads per run (default 1: a CPU result then does not depend on the "
        "machine's core count; use --max-parallel to fill the cores); 0 = torch's default",
    )
    parser.add_argument(
        "--cpus-per-run",
        type=float,
        default=1.0,
        help="Ray resources per run; Slurm: --cpus-per-task, rounded up (default 1)",
    )
    parser.add_argument(
        "--gpus-per-run",
        type=float,
        default=0.0,
        help="Ray resources per run; Slurm: the default of --slurm-gpus-per-run, rounded up",
    )
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="checkpoints of runs")
    parser.add_argument(
        "--cache",
        type=Path,
        help="feature cache (default: features/ under $ELMO_BENCH_CACHE, else ~/.cache/elmo-bench)",
    )
    parser.add_argument(
        "--cache-budget",
        type=budget,
        help="disk the feature cache may use: 20GB, 500MB, 50%% (of free disk plus the "
        "cache, the default) or unlimited; least-recently used whole entries are evicted",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--epoch-units",
        action="store_true",
        help="store the dev split's per-unit statistics at every evaluation (for seed-aware "
        "tests at every epoch, e.g. nox -s peer); not part of the run id",
    )
    parser.add_argument(
        "--max-skipped",
        type=share,
        default=0.5,
        metavar="SHARE",
        help="refuse a split whose reader skipped more than this share of its examples "
        "(configured filters not counted; default 0.5); an empty split is always refused",
    )
    add_slurm_options(parser)


def add_slurm_options(parser: argparse.ArgumentParser) -> None:
    """The ``--slurm-*`` options of ``--executor slurm`` (one job per run)."""
    group = parser.add_argument_group("Slurm (--executor slurm; docs/runs.md)")
    group.add_argument("--slurm-partition", metavar="NAME", help="default: the cluster's own")
    group.add_argument(
        "--slurm-time",
        type=positive_int,
        default=24 * 60,
        metavar="MINUTES",
        help="time limit of each job (default 1440); a job that reaches it is requeued and "
        "resumes from its last checkpoint",
    )
    group.add_argument(
        "--slurm-gpus-per-run",
        type=non_negative_int,
        metavar="N",
        help="GPUs of each job (default: --gpus-per-run rounded up)",
    )
    group.add_argument(
        "--slurm-folder",
        type=Path,
        metavar="DIR",
        help="the jobs' scripts and logs, one folder per job id (default: slurm/ under --work); "
        "it and --work must be on a file system the nodes share",
    )
    group.add_argument(
        "--slurm-set",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="more sbatch options as submitit names them, e.g. account=nlp mem_gb=32 "
        "constraint=a100 qos=high (values are JSON when they parse)",
    )


def add_run_family_options(
    parser: argparse.ArgumentParser,
    seeds: tuple[int, ...] | None,
    train: bool = True,
    sets: bool = False,
) -> None:
    """The options every table and training command shares, in their usual order (``sets``:
    ``--data`` takes registered sets by name, :func:`add_data_options`)."""
    add_seed_option(parser, seeds)
    add_data_options(parser, sets)
    add_representation_options(parser)
    add_output_options(parser)
    add_reuse_options(parser, rerun=train)
    if train:
        add_training_options(parser)


def add_tasks_option(parser: argparse.ArgumentParser) -> None:
    """``--tasks``: the rows of a whole table."""
    parser.add_argument(
        "--tasks",
        type=comma_list,
        help="rows of a whole table: comma-separated registered task names (default: table1 "
        "every task; table2, table3 and cove the tasks of the paper's table)",
    )


# ------------------------------------------------------------------------ the representation
def representation_config(
    name: str,
    elmo: Sequence[str] | None = None,
    *,
    glove: str | None = None,
    cove: str | None = None,
    finetune: float | None = None,
) -> dict[str, object]:
    """The configuration of representation ``name`` from ``--elmo``, ``--glove``, ``--cove``.

    ``--elmo`` is ``OPTIONS.json WEIGHTS.hdf5``, a project ``CHECKPOINT`` or
    ``published:NAME``; ``bilm-random`` takes only the architecture from it. Without
    ``--elmo`` the configuration names no biLM: planning gives it the preset's
    (:func:`experiments.plan.specs.preset_bilm`: the ``paper`` preset's is the published ELMo,
    never a smaller substitute).

    Args:
        name: the representation (a registered one with keys given by flags: ``elmo``,
            ``bilm-random``, ``glove``, ``cove``; any other gets ``{}``).
        elmo: the ``--elmo`` values.
        glove: ``--glove``. cove: ``--cove``.
        finetune: ``--finetune-bilm`` epochs (ELMo only).

    Raises:
        UsageError: flags that do not fit together.
    """
    return flag_config(name, {"elmo": elmo, "glove": glove, "cove": cove}, finetune)


def flag_config(
    name: str, given: Mapping[str, object], finetune: float | None = None
) -> dict[str, object]:
    """The keys of ``name``'s configuration that its declared flags give, in declaration order.

    A flag with a parser (``--elmo``) gives the keys its values name that ``name`` declares
    with it (``bilm-random`` keeps the architecture of ``OPTIONS.json WEIGHTS.hdf5``); any
    other flag gives its value to each option declared with it. A flag not given leaves its
    options out: a preset's value for one (:attr:`ReprOption.presets`) is given in planning
    (:func:`experiments.plan.specs.preset_bilm`), which knows the run's data.
    ``finetune`` (``--finetune-bilm``, 0 included: it overrides the preset's fine-tuning,
    :func:`experiments.plan.specs.bilm_config_for`) goes to a representation that
    declares ``finetune``; a representation read from the same flag that cannot fine-tune
    (``bilm-random``) refuses it.

    Args:
        name: the representation.
        given: each flag's value by its ``argparse`` attribute (``{"elmo": [...], ...}``;
            ``None`` or missing: not given).
        finetune: ``--finetune-bilm``.

    Raises:
        UsageError: a flag's values it cannot read, ``--elmo`` naming what ``name`` does not
            take, a required flag missing, ``--finetune-bilm`` for a biLM that cannot take it.
    """
    declared = _declared(name)
    config: dict[str, object] = {}
    for flag in dict.fromkeys(o.flag for o in declared if o.flag is not None):
        mine = [o for o in declared if o.flag == flag]
        values = given.get(flag.dest)
        if not values:
            continue
        if flag.parse is None:
            config |= {o.name: values for o in mine}
        else:
            words = [str(v) for v in values] if isinstance(values, list | tuple) else [str(values)]
            try:
                parsed = flag.parse(words)
            except ValueError as error:
                raise UsageError(one_line(error)) from None
            kept = {o.name: parsed[o.name] for o in mine if o.name in parsed}
            if not kept:
                takes = " or ".join(o.name for o in mine)
                raise UsageError(
                    f"{name} takes {flag.name} for {takes} only, not {' '.join(words)}"
                )
            config |= kept
    needs = [(o, o.flag) for o in declared if o.required and o.flag is not None]
    if any(o.name not in config for o, _ in needs):
        each = [f"{flag.name} {flag.metavar} ({o.help})" for o, flag in needs if flag]
        raise UsageError(f"{name} needs {' and '.join(each)}")
    if finetune is not None:
        tuned = [n for n, options in REPRESENTATION_OPTIONS.items() if _finetunes(options)]
        if name in tuned:
            config[FINETUNE] = finetune
        elif finetune and _flags(declared) & {f for n in tuned for f in _flags(_declared(n))}:
            raise UsageError(f"--finetune-bilm applies to --repr {' or '.join(tuned)}")
    return {o.name: config[o.name] for o in declared if o.name in config}


def _declared(name: str) -> tuple[ReprOption, ...]:
    return REPRESENTATION_OPTIONS.get(name, ())


def _finetunes(options: Sequence[ReprOption]) -> bool:
    return any(o.name == FINETUNE for o in options)


def _flags(options: Sequence[ReprOption]) -> set[str]:
    """The names of the flags that give some of ``options``."""
    return {o.flag.name for o in options if o.flag is not None}


def representation_options(pairs: Sequence[str]) -> dict[str, object]:
    """``--repr-set``'s ``KEY=VALUE`` pairs → options; a value is JSON when it parses, else a
    string.

    Raises:
        UsageError: a pair without ``=`` or without a key.
    """
    options: dict[str, object] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise UsageError(f"--repr-set takes KEY=VALUE, got {pair!r}")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


def check_options(name: str, options: Mapping[str, object]) -> None:
    """Check a representation's name and options without building it (before any run starts):
    every key is one it declares (:func:`tasks.representations.check_config`), every value of
    its type and among its choices, the adaptation consistent, and every option it needs given.

    Raises:
        UsageError: an unknown representation, an unknown option, a bad value or a missing
            option (one line; the unknown-option message lists the valid keys).
    """
    from experiments.run.represent import builder_options
    from tasks.representations import check_config, check_representation, declared_options
    from tasks.representations.adapt import adapt_config

    try:
        declared = declared_options(name) or ()
    except (KeyError, TypeError) as error:  # an unknown name, a plug-in's malformed OPTIONS
        raise UsageError(one_line(error)) from None
    try:
        check_config(name, options)
        adapt_config(options)
        builder = check_representation(name, builder_options(options))
    except (TypeError, ValueError) as error:
        raise UsageError(f"{one_line(error)} ({LIST_COMMAND})") from None
    try:
        parameters = list(inspect.signature(builder).parameters.values())
    except (TypeError, ValueError):  # no signature to read (a builtin): nothing more to check
        parameters = []
    signature = [
        p.name
        for p in parameters
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    required = dict.fromkeys([*signature, *(o.name for o in declared if o.required)])
    needed = [key for key in required if key not in options]
    if needed:
        given = ", ".join(f"{n}=..." for n in needed)
        raise UsageError(f"representation {name!r} needs option(s) {needed}: --repr-set {given}")


def run_config(args: argparse.Namespace, name: str = "elmo") -> dict[str, object]:
    """:func:`representation_config` from the options of :func:`add_run_family_options`:
    every declared flag's value (:func:`flag_config`)."""
    given = {flag.dest: getattr(args, flag.dest, None) for flag in representation_flags()}
    return flag_config(name, given, args.finetune_bilm)


def task_overrides(args: argparse.Namespace) -> list[str]:
    """``--set`` plus what the representations' flags also set in the task's configuration
    (``--glove`` as ``word_vectors``, the configs' common field: :attr:`ReprFlag.task_key`)
    and ``--turian`` as its ``turian_vectors``."""
    extra = [
        f"{flag.task_key}={getattr(args, flag.dest)}"
        for flag in representation_flags()
        if flag.task_key and getattr(args, flag.dest, None)
    ]
    extra += [f"turian_vectors={args.turian}"] if args.turian else []
    return [*args.overrides, *extra]
