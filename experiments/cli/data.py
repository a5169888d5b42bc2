"""Registered data sets by name: what ``run TASK --data NAME`` reads, and ``data list``.

    python -m experiments data list
    python -m experiments run ner --data conll2000-chunking --seeds 0

Every set of ``experiments/data/real_sets.toml`` is a ``--data`` value of ``run`` and ``sweep``
by its name (:func:`experiments.plan.specs.data_choice`). A name resolves to exactly the spec
the tables build for the set (``reproduce real``, ``reproduce paper-data``), so a run and a
table share their records: the set's data label (``shared:<folder>``), its task configuration
changes for the preset before the user's ``--set``, and its scored splits unless
``--eval-split`` says otherwise.

**Names and folders.** A ``--data`` value that is exactly a registered name is that set; set
names hold no ``/``, so any path with one (``./conll2000-chunking``, ``~/data/sst``) stays a
folder, as do ``demo``, ``real``, ``shared:FOLDER`` and ``hf:NAME``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from experiments.cli.errors import UsageError
from experiments.data.real_sets import named_set
from experiments.plan.specs import model_of

__all__ = ["configure", "list_lines", "names_help", "refuse_name", "run"]

#: How ``data list`` and messages mark a set of the paper's own Table 1 (family ``paper``).
PAPER_MARK = "the paper's own data"


def refuse_name(value: str, entry: str | None = None) -> None:
    """Refuse a registered set's name as a table command's data (``compare``, ``reproduce``,
    ``render``, ``sample-efficiency``): a set's rows are the set tables', one run on it is
    ``run``'s. Any other value passes.

    Args:
        value: a ``--data`` value (or a ``TASK=DATA`` entry's value).
        entry: the task of a ``TASK=DATA`` entry, ``None`` for a plain ``--data`` value.

    Raises:
        UsageError: ``value`` is a registered set's name (one line: how to run it, which table
            has a row per set, and how to name a folder of that name).
    """
    item = named_set(value)
    if item is None:
        return
    rows = "reproduce paper-data" if item.family == "paper" else "compare or reproduce --data real"
    given = f"{entry}={value}" if entry else value
    raise UsageError(
        f"--data {given}: a registered set's name is a run's data (run {item.task} --data "
        f"{item.name}); {rows} has a row per set ({item.data} names its folder, ./{item.name} "
        "a folder of that name)"
    )


def names_help() -> str:
    """The registered sets' names per task, for ``--help`` (``(paper's)``: a data set of the
    paper's Table 1), e.g. ``ner: litbank-entities, conll2003 (paper's); sst5: ...``; ``""``
    when the registry cannot be read."""
    from experiments.data.real_sets import real_sets
    from tasks.registry import TASKS

    try:
        sets = real_sets()
    except (OSError, ValueError):  # a broken registry: the data commands say so, not --help
        return ""
    by_task: dict[str, list[str]] = {}
    for item in sets:
        mark = " (paper's)" if item.family == "paper" else ""
        by_task.setdefault(item.task, []).append(item.name + mark)
    ordered = [t for t in TASKS if t in by_task]
    return "; ".join(f"{t}: {', '.join(by_task[t])}" for t in ordered)


# ------------------------------------------------------------------------------- data list
def configure(parser: argparse.ArgumentParser) -> None:
    """``data list``."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser(
        "list",
        help="per task: its model, and each set it reads by name (label, split scored, family, "
        "present here or how to fetch it)",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``data ACTION`` (``list``: print :func:`list_lines`)."""
    del args  # one action
    for line in list_lines():
        print(line)
    return 0


def list_lines() -> list[str]:
    """``data list``'s lines: per registered task a line with its model, then one line per set
    it reads: its name, label, the split its numbers are scored on, its family, and where it
    is on this machine or the command that fetches it; last, how to use a name."""
    from experiments.data.real_sets import data_path, fetch_command, real_sets
    from tasks.registry import TASKS, get_task

    fetchable = _fetchable()
    lines = []
    sets = real_sets()
    for task in TASKS:
        own = [s for s in sets if s.task == task]
        if not own:
            lines.append(
                f"{task} ({model_of(get_task(task))}): no registered set (--data DIR or demo)"
            )
            continue
        lines.append(f"{task} ({model_of(get_task(task))}):")
        for item in own:
            family = f"{item.family}: {PAPER_MARK}" if item.family == "paper" else item.family
            path = Path(str(data_path(item.data)))
            if path.is_dir():
                where = f"present ({path})"
            elif fetchable is None or item.name in fetchable:
                terms = f" --accept-terms {item.name}" if fetchable and fetchable[item.name] else ""
                where = f"missing: {fetch_command()} --sets {item.name}{terms}"
            else:
                where = f"missing: put it in {path} (no public source is registered)"
            lines.append(
                f"  {item.name}: {item.label}; scored on {item.split}; family {family}; {where}"
            )
    lines.append(
        "Use one: python -m experiments run TASK --data NAME (its changes and scored split come "
        "with it; ./NAME is a folder); a row per set: reproduce real, reproduce paper-data."
    )
    return lines


def _fetchable() -> dict[str, bool] | None:
    """The sets ``real-data fetch`` can build, each → whether it needs ``--accept-terms``
    (``None``: its manifest cannot be read)."""
    from experiments.data.fetch import load_manifest

    try:
        return {name: bool(entry.terms) for name, entry in load_manifest().sets.items()}
    except (OSError, ValueError) as error:
        print(f"data: the fetch manifest is unreadable: {error}", file=sys.stderr)
        return None
