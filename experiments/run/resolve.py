"""A run resolved once: the spec's task, configuration, representation, data and identity in one
object, built where a command hands its runs out and passed down to the training loop.

A :class:`~experiments.run.spec.RunSpec` names what was asked for; :func:`resolve` looks its task up
in the registry (the only lookup of the run), configures the preset with the overrides, checks
the representation's options and says where the data are read from. :func:`identified` adds the
run's :class:`~experiments.run.identity.RunIdentity` (it needs the device, precision and threads, so
a command that runs on other machines identifies its runs there). Everything downstream (the
reuse check of :func:`experiments.run.executors.run_sweep`, the set-up of
:func:`experiments.run.setup.set_up`, the checkpoint's identity, the record's provenance) reads the
one object.

A :class:`Resolver` keeps each run's object for the process that resolved it, so a command's
check, its reuse decision and the run itself share it::

    resolver = Resolver(device="cpu", precision="fp32", threads=1)
    resolver.resolve(spec)             # checked: task, preset, overrides, representation
    resolver.identify(spec)            # the identity the reuse check compares
    run_spec(resolver(spec), options)  # the same object, identity included

Nothing here imports torch or a task at import time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from experiments.run.identity import RunIdentity, reuse_key, run_identity
from experiments.run.spec import NO_REPRESENTATION, RunSpec

if TYPE_CHECKING:
    from tasks.core import TaskSpec

__all__ = ["ResolvedRun", "Resolver", "identified", "resolve"]


@dataclass(frozen=True)
class ResolvedRun:
    """One run with everything its spec names looked up, each once.

    Attributes:
        spec: what was asked for.
        task: the spec's task, from the registry.
        config: the task's configuration for the spec's preset and overrides
            (:meth:`tasks.core.TaskSpec.configure`: every default as the code has it now).
        representation: the representation's configuration as the run reads it (the spec's,
            its options checked against the representation's builder).
        data: the folder the task's ``setup`` reads (``None``: the task's bundled DEMO set).
        identity: the run's identity (:func:`identified`); ``None``: not identified (a run of
            :func:`experiments.run.runner.train` alone: its checkpoint is not checked against one).
    """

    spec: RunSpec
    task: TaskSpec
    config: Any
    representation: Mapping[str, Any]
    data: str | None
    identity: RunIdentity | None = None

    @property
    def reuse_key(self) -> str:
        """The identity's reuse fields as JSON (:func:`experiments.run.identity.reuse_key`), the
        key a checkpoint resumes under; ``""`` without an identity (not checked)."""
        return "" if self.identity is None else reuse_key(self.identity.to_dict())


def resolve(spec: RunSpec) -> ResolvedRun:
    """The spec's task, configuration, representation and data folder, checked; no data is
    read, no weights are loaded, no device is looked at.

    Raises:
        KeyError: an unknown task or representation.
        ValueError: an unknown preset or a bad override.
        TypeError: an unknown representation option.
    """
    from experiments.data.real_sets import data_path
    from experiments.run.represent import builder_options
    from tasks.registry import get_task
    from tasks.representations import check_representation

    task = get_task(spec.task)
    config = task.configure(spec.preset, list(spec.overrides))  # checks the preset too
    representation = dict(spec.representation_config)
    if spec.representation != NO_REPRESENTATION:
        check_representation(spec.representation, builder_options(representation))
    return ResolvedRun(spec, task, config, representation, data_path(spec.data))


def identified(
    run: ResolvedRun, device: str = "auto", precision: str = "fp32", threads: int | None = None
) -> ResolvedRun:
    """``run`` with its identity on this machine (:func:`experiments.run.identity.run_identity`
    of the task and configuration it holds), computed unless it has one.

    Args:
        run: a resolved run.
        device: the ``--device`` value.
        precision: the ``--precision`` value.
        threads: CPU threads per run (``None``: torch's default on this machine).
    """
    if run.identity is not None:
        return run
    identity = run_identity(run.spec, device, precision, threads, task=run.task, config=run.config)
    return dataclasses.replace(run, identity=identity)


class Resolver:
    """Each run resolved and identified once in this process, by run id.

    A command checks its runs with :meth:`resolve`, decides reuse with :meth:`identify` and
    trains ``resolver(spec)``: one object throughout. Pickled (into a spawned worker, a Ray
    task, a Slurm job) it travels without its objects, so a run on another machine is
    identified there, with that machine's device.

    Args:
        device: the ``--device`` value of the runs.
        precision: their ``--precision``.
        threads: their CPU threads (``None``: torch's default).
    """

    def __init__(
        self, device: str = "auto", precision: str = "fp32", threads: int | None = None
    ) -> None:
        self.device = device
        self.precision = precision
        self.threads = threads
        self._runs: dict[str, ResolvedRun] = {}

    def resolve(self, spec: RunSpec) -> ResolvedRun:
        """The spec's :class:`ResolvedRun` (identified or not: whichever this process has).

        Raises:
            KeyError, ValueError, TypeError: as :func:`resolve`.
        """
        run = self._runs.get(spec.run_id)
        if run is None:
            run = self._runs[spec.run_id] = resolve(spec)
        return run

    def __call__(self, spec: RunSpec) -> ResolvedRun:
        """The spec's identified :class:`ResolvedRun`."""
        run = self.resolve(spec)
        if run.identity is None:
            run = identified(run, self.device, self.precision, self.threads)
            self._runs[spec.run_id] = run
        return run

    def identify(self, spec: RunSpec) -> RunIdentity:
        """The identity a run of ``spec`` has here (:attr:`ResolvedRun.identity`)."""
        identity = self(spec).identity
        assert identity is not None
        return identity

    def __getstate__(self) -> dict[str, Any]:
        """The options only: a process that unpickles the resolver resolves for itself."""
        return {**self.__dict__, "_runs": {}}
