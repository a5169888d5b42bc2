"""Every task, in one dict literal (no import side effects, no directory scanning)."""

from __future__ import annotations

from tasks.core import TaskSpec
from tasks.coref.task import TASK as COREF
from tasks.ner.task import TASK as NER
from tasks.snli.task import TASK as SNLI
from tasks.squad.task import TASK as SQUAD
from tasks.srl.task import TASK as SRL
from tasks.sst5.task import TASK as SST5

# Table 1's order (paper §4)
TASKS: dict[str, TaskSpec] = {task.name: task for task in (SQUAD, SNLI, SRL, COREF, NER, SST5)}


def get_task(name: str) -> TaskSpec:
    """Look a task up by name; the error lists the valid names."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}") from None
