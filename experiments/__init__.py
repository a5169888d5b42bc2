"""ELMo Bench experiments layer: ``RunSpec → run → store → render`` (STYLE.md §3.4).

* :mod:`experiments.spec`: :class:`RunSpec`, :func:`run_id`, :func:`expand_sweep`.
* :mod:`experiments.store`: :class:`ResultsStore` (append-only, atomic), :class:`RunRecord`,
  :func:`collect_env`.
* :mod:`experiments.render`: :class:`TableSpec` → Markdown / LaTeX / CSV, paper numbers beside ours.
* :mod:`experiments.plots`: layer-weight bars and learning curves (matplotlib, lazily).
* :mod:`experiments.executors`: :func:`run_sweep`, locally or on Ray (lazily).

This package imports neither torch nor any task: specs, stores and tables work without a model.
"""

from experiments.executors import SweepError, SweepResult, run_sweep
from experiments.render import (
    IncreaseColumn,
    MetricFormat,
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
    "MetricFormat",
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
