"""Every task, in one dict literal (no import side effects, no directory scanning)."""

from __future__ import annotations

from tasks.core import TaskSpec
from tasks.squad.task import TASK as SQUAD

TASKS: dict[str, TaskSpec] = {task.name: task for task in (SQUAD,)}


def get_task(name: str) -> TaskSpec:
    """Look a task up by name; the error lists the valid names."""
    try:
        return TASKS[name]
    except KeyError:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}") from None
