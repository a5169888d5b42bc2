"""Every task, in one dict literal (no import side effects, no directory scanning)."""

from __future__ import annotations

from tasks.core import TaskSpec
from tasks.ner.task import TASK as NER
from tasks.squad.task import TASK as SQUAD
from tasks.srl.task import TASK as SRL

TASKS: dict[str, TaskSpec] = {task.name: task for task in (SQUAD, SRL, NER)}


def get_task(name: str) -> TaskSpec:
    """Look a task up by name; the error lists the valid names."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}") from None
