"""ELMo Bench experiments layer: ``RunSpec → run → store → render`` (STYLE.md §3.4).

* :mod:`experiments.spec`: :class:`RunSpec`, :func:`run_id`, :func:`expand_sweep`.
* :mod:`experiments.store`: :class:`ResultsStore` (append-only, atomic), :class:`RunRecord`,
  :func:`collect_env`.
* :mod:`experiments.render`: :class:`TableSpec` → Markdown / LaTeX / CSV, paper numbers beside ours.
* :mod:`experiments.plots`: layer-weight bars and learning curves (matplotlib, lazily).
* :mod:`experiments.executors`: :func:`run_sweep`, locally or on Ray (lazily).
* :mod:`experiments.resolve`: a run resolved once (task, configuration, representation, data,
  identity); :mod:`experiments.setup` builds its objects, :mod:`experiments.optim` its
  optimizer and EMA.
* :mod:`experiments.runner`: the one training loop (imported on demand: it loads the models).
* :mod:`experiments.wandb_sink`: W&B logging (wandb imported only when asked for).

This package names no task: everything task-specific comes through :class:`tasks.core.TaskSpec`.
"""

from experiments.executors import SweepError, SweepResult, run_sweep
from experiments.render import (
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
from experiments.spec import (
    MixSpec,
    RunSpec,
    baseline_of,
    canonical_json,
    derive,
    expand_sweep,
    run_id,
)
from experiments.store import (
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
