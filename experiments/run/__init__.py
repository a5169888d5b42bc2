"""The run side: one training run from its spec to its stored record.

A :class:`~experiments.run.spec.RunSpec` (:mod:`~experiments.run.spec`) is resolved once
(:mod:`~experiments.run.resolve`: task, configuration, representation, data, identity), its
objects are built (:mod:`~experiments.run.setup`, :mod:`~experiments.run.represent`,
:mod:`~experiments.run.optim`), the one training loop runs it (:mod:`~experiments.run.runner`,
with :mod:`~experiments.run.checkpoint`, :mod:`~experiments.run.progress`,
:mod:`~experiments.run.health` and :mod:`~experiments.run.scoring`), and the result lands in the
append-only store (:mod:`~experiments.run.store`) under its identity
(:mod:`~experiments.run.identity`). :mod:`~experiments.run.executors` runs many (locally, Ray,
Slurm); :mod:`~experiments.run.wandb_sink` mirrors a run to W&B when asked.
:mod:`~experiments.run.predict` rebuilds a stored run and applies its selected weights to new
text; :mod:`~experiments.run.errors` words an error on one line.

May import: :mod:`bilm`, :mod:`tasks` (through the registry and :class:`tasks.core.TaskSpec`) and
:mod:`experiments.data`; never :mod:`experiments.report`, :mod:`experiments.analyses`,
:mod:`experiments.peer` or :mod:`experiments.cli` (``tests/test_boundaries.py``).
"""
