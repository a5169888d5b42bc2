"""ELMo Bench experiments layer: ``RunSpec → run → store → render``, in folders by concern.

* :mod:`experiments.run`: the run side: a spec resolved once, set up, trained by the one loop,
  checkpointed, scored and stored under its identity; executors for many runs.
* :mod:`experiments.data`: the real data sets (registry, ``shared:`` labels, rebuilding them).
* :mod:`experiments.plan`: a command's typed request turned into its run specs (a task's base
  spec and biLM, data names, ``run``'s point, ``sweep``'s grid, a stored spec replayed).
* :mod:`experiments.report`: tables, figures, the HTML page and the committed-results check, from
  stored runs alone.
* :mod:`experiments.analyses`: the paper's §5.3 probes and nearest neighbours.
* :mod:`experiments.peer`: each baseline trained beside allennlp-models (``nox -s peer``).
* :mod:`experiments.cli`: ``python -m experiments`` / ``elmo-bench``, the commands over all of it.

The run side imports nothing from plan, report, analyses, peer or the CLI, the planning side nothing
from report, analyses, peer or the CLI (``tests/test_boundaries.py``);
the package names no task: everything task-specific comes through :class:`tasks.core.TaskSpec`.
This module re-exports the small public API below; docs/architecture.md draws the whole.
"""

from experiments.report.render import (
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    load_paper,
    render,
    table1,
    table2,
    table3,
)
from experiments.run.executors import SweepError, SweepResult, run_sweep
from experiments.run.spec import (
    MixSpec,
    RunSpec,
    baseline_of,
    canonical_json,
    derive,
    expand_sweep,
    run_id,
)
from experiments.run.store import (
    Provenance,
    ResultsStore,
    RunExistsError,
    RunRecord,
    collect_env,
    fingerprint_files,
)

__all__ = [
    "IncreaseColumn",
    "MixSpec",
    "Provenance",
    "ResultsStore",
    "Row",
    "RunExistsError",
    "RunRecord",
    "RunSpec",
    "RunsColumn",
    "SweepError",
    "SweepResult",
    "TableSpec",
    "baseline_of",
    "canonical_json",
    "collect_env",
    "derive",
    "expand_sweep",
    "fingerprint_files",
    "load_paper",
    "render",
    "run_id",
    "run_sweep",
    "table1",
    "table2",
    "table3",
]
