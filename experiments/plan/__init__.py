"""The planning side: a command's typed request turned into the run specs it trains.

:mod:`~experiments.plan.requests` holds the requests a command builds from its command line
once (:class:`~experiments.plan.requests.RunRequest`,
:class:`~experiments.plan.requests.SweepRequest`); the task travels in them as its
:class:`~tasks.core.TaskSpec`. :mod:`~experiments.plan.specs` turns them into run specs: a
task's Table 1 ELMo spec in a preset (:func:`~experiments.plan.specs.base_spec`, its biLM by
:func:`~experiments.plan.specs.bilm_config_for`), its baseline, a data value or a registered
set's name resolved for a task (:func:`~experiments.plan.specs.data_choice`), ``run``'s one
point and ``sweep``'s grid; :mod:`~experiments.plan.replay` reads a stored run's spec and says
what changed since it was recorded. The tables of :mod:`experiments.report` build their rows
from the same functions, so a run and a table share their records.

May import: :mod:`experiments.run` (specs, identities) and :mod:`experiments.data`; never
:mod:`experiments.report`, :mod:`experiments.analyses`, :mod:`experiments.peer` or
:mod:`experiments.cli` (``tests/test_boundaries.py``). Nothing here reads a command line:
mistakes are :class:`~experiments.plan.specs.PlanError` (a ``ValueError``), which the command
line reports in one line with exit status 2.
"""
