"""Run a sweep (a list of :class:`~experiments.run.spec.RunSpec`) locally, on Ray or on Slurm.

:func:`run_sweep` reuses every spec whose stored record still stands for it ("a rerun skips
finished runs"): with ``identify``, only a record whose recorded identity matches the identity
the run would have now (:func:`experiments.run.identity.reuse_differences`: data, representation,
resolved configuration, device kind, precision, threads, result versions). A stale record is
trained again and replaced (the old one is kept under ``superseded/``), unless the policy says
``"stale"`` (reuse it knowingly: ``--reuse-stale``); ``"never"`` retrains everything
(``--rerun``). The rest runs through a caller-supplied ``run_one(spec) -> RunRecord``, and each
record is put into the store **from the driver** as soon as it arrives, so an interrupted sweep
keeps everything finished so far and the next call resumes. One failing run does not stop the
others; the failures are reported together at the end (:class:`SweepError`).

Every run is claimed in the store before it starts (:meth:`ResultsStore.claim`): a run that
another process is training is waited for and then reused, never trained twice.

Executors:

* ``"local"``: in this process, one run after another (``max_parallel=1``), or in
  ``max_parallel`` spawned processes (``run_one`` must then be picklable: a module-level function).
* ``"ray"``: ``run_one`` becomes a Ray task; ``ray.init(address=address)`` joins a cluster, or a
  local 2-CPU Ray starts when ``address`` is ``None`` (and is shut down afterwards). Ray is imported
  only here, only when asked for.
* ``"slurm"``: one Slurm job per run, submitted through submitit (:class:`SlurmOptions`; at most
  ``max_parallel`` jobs queued or running at once). The driver claims, waits for, and stores the
  runs exactly as above; a job that reaches its time limit or is preempted is requeued, and a
  job that ends otherwise (cancelled, killed, out of memory) is reported failed: the next sweep
  submits it again and it resumes from the checkpoint in its work folder, which must therefore
  be on a file system the nodes share. When records are stored, the identities they are
  compared with are computed by one short job on a compute node (a login node without the
  nodes' GPUs would see another device kind). submitit is imported only here, only when asked
  for.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from experiments.run.identity import RunIdentity, reuse_differences
from experiments.run.spec import RunSpec
from experiments.run.store import REPO_ROOT, Claim, ResultsStore, RunExistsError, RunRecord

logger = logging.getLogger(__name__)

Executor = Literal["local", "ray", "slurm"]
EXECUTORS: tuple[str, ...] = ("local", "ray", "slurm")
#: ``"matching"``: reuse a record only while its identity matches (default); ``"stale"``: reuse
#: any stored record (``--reuse-stale``); ``"never"``: train every run again (``--rerun``).
Reuse = Literal["matching", "stale", "never"]
REUSE: tuple[str, ...] = ("matching", "stale", "never")
Identify = Callable[[RunSpec], RunIdentity]
LOCAL_RAY_CPUS = 2
RunOne = Callable[[RunSpec], RunRecord]
#: Called once per run of a sweep: ``(status, spec, detail)`` with status ``"stored"`` (already
#: in the store), ``"stale"`` (reused although its identity no longer matches: policy
#: ``"stale"``), ``"done"`` or ``"failed"``; detail is the error message of a failure, or why a
#: stored record was stale (and replaced, for ``"done"``).
OnEvent = Callable[[str, RunSpec, str], None]
#: How to get submitit, in the message of a sweep that needs it (one line).
SLURM_INSTALL = "pip install 'elmo-bench[slurm]'"


@dataclass(frozen=True)
class SlurmOptions:
    """How ``executor="slurm"`` submits its jobs: one job per run, one task on one node.

    Attributes:
        folder: submitit's folder: each job's script, pickles and logs go to
            ``folder/<job id>/`` (``<job id>_0_log.err`` is the run's stderr); the CLI's
            ``--slurm-folder``, by default ``slurm/`` under ``--work``. The nodes read it, and
            they write the runs' checkpoints (``RunOptions.work_root``): both must be on a
            file system the nodes share with the driver. The store is written by the driver.
        partition: ``sbatch --partition`` (``None``: the cluster's default).
        minutes: ``sbatch --time`` of each job. A job that reaches it (or is preempted) is
            requeued, at most ``requeues`` times, and resumes from its last checkpoint.
        cpus: ``--cpus-per-task``.
        gpus: ``--gpus-per-node`` (0: none).
        name: the job name's prefix; a run's job is ``<name>-<task>-<run_id>``.
        parameters: more submitit parameters, named as ``submitit.AutoExecutor`` takes them,
            e.g. ``{"slurm_account": "nlp", "slurm_mem_gb": 32, "slurm_constraint": "a100"}``.
        requeues: how many times a job may be requeued after its time limit.
        cluster: submitit's cluster: ``"slurm"``; ``"local"`` runs every job as a process on
            this machine, with the same files, pickles and requeue logic (tests, a dry run).
        poll_seconds: how often the driver looks at the jobs' states.
        identify_on_node: compute the stored runs' identities in a job (see the module's
            docstring); ``False``: on the driver.
    """

    folder: Path = Path("runs/work/slurm")
    partition: str | None = None
    minutes: int = 24 * 60
    cpus: int = 1
    gpus: int = 0
    name: str = "elmo-bench"
    parameters: Mapping[str, Any] = field(default_factory=dict)
    requeues: int = 3
    cluster: str = "slurm"
    poll_seconds: float = 5.0
    identify_on_node: bool = True


@dataclass(frozen=True)
class SweepResult:
    """What a sweep did, by run_id (each in the order of the given specs).

    Attributes:
        ran: run and stored by this call.
        skipped: already stored (before the call, or by a concurrent writer meanwhile).
        failed: run_id → error message, for runs that raised or returned a wrong record.
        stale: run_id → why its record no longer matches, for records reused anyway
            (policy ``"stale"``; they are also in ``skipped``).
        superseded: run_id → why, for stale records this call trained again and replaced.
    """

    ran: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)
    stale: Mapping[str, str] = field(default_factory=dict)
    superseded: Mapping[str, str] = field(default_factory=dict)


class SlurmJobError(RuntimeError):
    """A run's Slurm job could not be submitted, failed, or ended without a result; the
    message is one line with the job id and its log."""


class SweepError(RuntimeError):
    """Some runs of a sweep failed; the others are stored. ``result`` has the details."""

    def __init__(self, result: SweepResult) -> None:
        lines = [f"  {rid}: {message}" for rid, message in result.failed.items()]
        super().__init__(
            f"{len(result.failed)} of {len(result.ran) + len(result.failed)} runs failed "
            f"({len(result.skipped)} skipped):\n" + "\n".join(lines)
        )
        self.result = result


def run_sweep(
    specs: Iterable[RunSpec],
    run_one: RunOne,
    store: ResultsStore,
    executor: Executor = "local",
    address: str | None = None,
    max_parallel: int = 1,
    ray_options: Mapping[str, Any] | None = None,
    on_event: OnEvent | None = None,
    identify: Identify | None = None,
    reuse: Reuse = "matching",
    slurm: SlurmOptions | None = None,
) -> SweepResult:
    """Run every spec without a usable stored record and store the records.

    Args:
        specs: the sweep; duplicates (same run_id) run once.
        run_one: trains one spec and returns its record (``record.spec`` must equal the spec).
        store: where finished runs are looked up and put.
        executor: ``"local"``, ``"ray"`` or ``"slurm"``.
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts a
            local 2-CPU Ray unless Ray is already initialised. Only for ``executor="ray"``.
        max_parallel: runs in flight at once.
        ray_options: options of each Ray task, e.g. ``{"num_gpus": 1}`` (default: 1 CPU).
        on_event: progress callback, one call per run (see :data:`OnEvent`).
        identify: the identity a run of a spec would have now
            (:func:`experiments.run.identity.run_identity` with the run options); ``None``: any
            stored record counts as finished (no identity check).
        reuse: :data:`Reuse` policy.
        slurm: the Slurm jobs' options (``None``: :class:`SlurmOptions` defaults). Only for
            ``executor="slurm"``.

    Returns:
        What ran, what was skipped, reused stale, replaced and what failed.

    Raises:
        SweepError: after all other runs finished and were stored, if any run failed.
        ImportError: ``executor="ray"`` without Ray, ``"slurm"`` without submitit (one line
            naming the install command).
        SlurmJobError: the job computing stored runs' identities on a node could not be
            submitted or failed (no run has started).
    """
    _check_sweep_options(executor, address, max_parallel, reuse)
    if slurm is not None and executor != "slurm":
        raise ValueError("slurm options are only used with executor='slurm'")
    if executor == "slurm":
        slurm = slurm or SlurmOptions()
        _import_submitit()  # before any claim: a missing package costs nothing
    unique: dict[str, RunSpec] = {}
    for spec in specs:
        unique.setdefault(spec.run_id, spec)
    tally = _Tally(store, skipped=[], on_event=on_event)
    identities = _identities(unique, identify, store, slurm)
    pending = [s for s in unique.values() if tally.needs_run(s, identities.get(s.run_id), reuse)]
    logger.info(
        "sweep: %d runs, %d to do, %d stored", len(unique), len(pending), len(tally.skipped)
    )
    waited: list[RunSpec] = []
    while pending:
        mine = tally.claim(pending, waited, identities, reuse)
        if mine:
            _execute(mine, run_one, tally, executor, address, max_parallel, ray_options, slurm)
        # runs another process was training: wait for it, then reuse its record or train
        pending = [s for s in waited if tally.after_wait(s, identities.get(s.run_id), reuse)]
        waited = []
    result = tally.result(order=list(unique))
    if result.failed:
        raise SweepError(result)
    return result


def _check_sweep_options(executor: str, address: str | None, max_parallel: int, reuse: str) -> None:
    """Raise a ValueError naming the first of :func:`run_sweep`'s options that is invalid."""
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if reuse not in REUSE:
        raise ValueError(f"reuse must be one of {REUSE}, got {reuse!r}")
    if max_parallel < 1:
        raise ValueError(f"max_parallel must be >= 1, got {max_parallel}")
    if address is not None and executor != "ray":
        raise ValueError("address is only used with executor='ray'")


def _identities(
    unique: Mapping[str, RunSpec],
    identify: Identify | None,
    store: ResultsStore,
    slurm: SlurmOptions | None,
) -> dict[str, RunIdentity]:
    """The identity each run would have now, by run_id (``{}`` without ``identify``). On
    Slurm (``identify_on_node``), only the stored runs' identities matter (the others are
    trained whatever they are), and they are computed by one job on a compute node."""
    if identify is None:
        return {}
    if slurm is None or not slurm.identify_on_node:
        return {rid: identify(spec) for rid, spec in unique.items()}
    stored = [spec for rid, spec in unique.items() if store.has(rid)]
    if not stored:
        return {}
    try:
        job = _slurm_executor(slurm, f"{slurm.name}-identities").submit(
            _identify_all, identify, stored
        )
    except Exception as error:  # sbatch refused it (a partition, account, time limit)
        raise SlurmJobError(
            f"the job computing the stored runs' identities could not be submitted: {_short(error)}"
        ) from None
    logger.info("identities of %d stored runs: Slurm job %s", len(stored), job.job_id)
    try:
        found: dict[str, RunIdentity] = _wait(job, slurm).result()
    except KeyboardInterrupt:
        job.cancel(check=False)
        raise
    except Exception as error:
        raise SlurmJobError(
            f"the job computing the stored runs' identities failed: {_job_error(job, error)}"
        ) from None
    return found


def _identify_all(identify: Identify, specs: list[RunSpec]) -> dict[str, RunIdentity]:
    """``identify`` of every spec, by run_id (inside a Slurm job)."""
    return {spec.run_id: identify(spec) for spec in specs}


def _after_other(reuse: Reuse) -> Reuse:
    """The policy for a run another process has just stored: ``--rerun`` is satisfied by it."""
    return "matching" if reuse == "never" else reuse


def _execute(
    pending: list[RunSpec],
    run_one: RunOne,
    tally: _Tally,
    executor: Executor,
    address: str | None,
    max_parallel: int,
    ray_options: Mapping[str, Any] | None,
    slurm: SlurmOptions | None = None,
) -> None:
    if executor == "ray":
        _run_ray(pending, run_one, tally, address, max_parallel, ray_options or {})
    elif executor == "slurm":
        _run_slurm(pending, run_one, tally, max_parallel, slurm or SlurmOptions())
    elif max_parallel == 1:
        for spec in pending:
            try:
                record = run_one(spec)
            except Exception as error:  # reported in SweepError
                tally.fail(spec, error)
            else:
                tally.done(spec, record)
    else:
        _run_processes(pending, run_one, tally, max_parallel)


@dataclass
class _Tally:
    store: ResultsStore
    skipped: list[str]
    ran: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    on_event: OnEvent | None = None
    stale: dict[str, str] = field(default_factory=dict)
    replace: dict[str, str] = field(default_factory=dict)  # stale records to supersede
    claims: dict[str, Claim] = field(default_factory=dict)
    seen: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # identity looked at

    def needs_run(self, spec: RunSpec, identity: RunIdentity | None, reuse: Reuse) -> bool:
        """Whether ``spec`` must be trained; reports the reused ones."""
        rid = spec.run_id
        stored = self.seen[rid] = self.store.identity_of(rid)
        if stored is None:
            return True
        reasons = reuse_differences(stored, identity) if identity is not None else []
        if reuse == "never":
            self.replace[rid] = "rerun asked for (--rerun)"
            return True
        if reasons and reuse == "matching":
            self.replace[rid] = "; ".join(reasons)
            return True
        self.skipped.append(rid)
        if reasons:
            self.stale[rid] = "; ".join(reasons)
        if self.on_event is not None:
            self.on_event("stale" if reasons else "stored", spec, self.stale.get(rid, ""))
        return False

    def claim(
        self,
        pending: list[RunSpec],
        waited: list[RunSpec],
        identities: Mapping[str, RunIdentity],
        reuse: Reuse,
    ) -> list[RunSpec]:
        """The specs this process may train now; the ones another process is training go to
        ``waited``. A run another process stored between the first look and the claim is
        looked at again under the claim, and reused when it may be."""
        mine = []
        for spec in pending:
            claim = self.store.claim(spec, wait=False)
            if claim is None:
                logger.info("run %s is being trained by another process; waiting", spec.run_id)
                waited.append(spec)
                continue
            if self.store.identity_of(spec.run_id) != self.seen.get(spec.run_id):
                self.replace.pop(spec.run_id, None)
                if not self.needs_run(spec, identities.get(spec.run_id), _after_other(reuse)):
                    claim.release()
                    continue
            self.claims[spec.run_id] = claim
            mine.append(spec)
        return mine

    def after_wait(self, spec: RunSpec, identity: RunIdentity | None, reuse: Reuse) -> bool:
        """Block until the other process has released ``spec``; whether to train it now."""
        claim = self.store.claim(spec, wait=True)
        assert claim is not None
        claim.release()  # needs_run decides afresh; claim() takes it again if it must run
        self.replace.pop(spec.run_id, None)
        return self.needs_run(spec, identity, _after_other(reuse))

    def _release(self, rid: str) -> None:
        claim = self.claims.pop(rid, None)
        if claim is not None:
            claim.release()

    def done(self, spec: RunSpec, record: object) -> None:
        rid = spec.run_id
        try:
            if not isinstance(record, RunRecord) or record.spec != spec:
                got = record.run_id if isinstance(record, RunRecord) else type(record).__name__
                self.failed[rid] = f"run_one returned a record for {got}, not for {rid}"
                return
            reason = self.replace.get(rid)
            try:
                self.store.put(record, replace=reason is not None, reason=reason or "")
            except RunExistsError:
                logger.info("run %s was stored meanwhile by another writer; keeping that one", rid)
                self.skipped.append(rid)
            except Exception as error:  # reported in SweepError
                self.fail(spec, error)
            else:
                logger.info("stored run %s", rid)
                self.ran.append(rid)
                if self.on_event is not None:
                    detail = f"replaced a stale record: {reason}" if reason else ""
                    self.on_event("done", spec, detail)
        finally:
            self._release(rid)

    def fail(self, spec: RunSpec, error: BaseException) -> None:
        logger.error("run %s failed: %r", spec.run_id, error)
        self.failed[spec.run_id] = f"{type(error).__name__}: {error}"
        self._release(spec.run_id)
        if self.on_event is not None:
            self.on_event("failed", spec, self.failed[spec.run_id])

    def result(self, order: list[str]) -> SweepResult:
        rank = {rid: i for i, rid in enumerate(order)}

        def ordered(ids: Iterable[str]) -> list[str]:
            return sorted(set(ids), key=rank.__getitem__)

        return SweepResult(
            ran=tuple(ordered(self.ran)),
            skipped=tuple(ordered(self.skipped)),
            failed={rid: self.failed[rid] for rid in ordered(self.failed)},
            stale={rid: self.stale[rid] for rid in ordered(self.stale)},
            superseded={rid: self.replace[rid] for rid in ordered(self.ran) if rid in self.replace},
        )


def _exit_with_parent(parent: int) -> None:
    """Pool-worker initializer: end this worker when the sweep's process is gone (killed with
    SIGKILL it cannot stop its workers, which would train on for nothing and then race a
    restarted sweep for the same checkpoints)."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _run_processes(pending: list[RunSpec], run_one: RunOne, tally: _Tally, workers: int) -> None:
    context = multiprocessing.get_context("spawn")  # no fork of a threaded (torch) parent
    with concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
    ) as pool:
        futures = {pool.submit(run_one, spec): spec for spec in pending}
        for future in concurrent.futures.as_completed(futures):
            spec = futures[future]
            try:
                record = future.result()
            except Exception as error:  # reported in SweepError
                tally.fail(spec, error)
            else:
                tally.done(spec, record)


def _call(run_one: RunOne, spec: RunSpec) -> RunRecord:
    """``run_one(spec)`` inside a Ray worker."""
    return run_one(spec)


def _run_ray(
    pending: list[RunSpec],
    run_one: RunOne,
    tally: _Tally,
    address: str | None,
    max_parallel: int,
    options: Mapping[str, Any],
) -> None:
    try:
        ray = importlib.import_module("ray")
    except ImportError as error:
        raise ImportError(
            "executor='ray' needs Ray: pip install ray (or the project's 'ray' extra)"
        ) from error
    started = False
    if not ray.is_initialized():
        if address is None:
            # workers must import `experiments` (to unpickle specs) and the caller's run_one
            path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
            ray.init(
                num_cpus=LOCAL_RAY_CPUS,
                include_dashboard=False,
                runtime_env={"env_vars": {"PYTHONPATH": path}},
            )
        else:
            ray.init(address=address)
        started = True
    try:
        # ray.remote takes functions and classes only, not e.g. functools.partial objects
        # (the CLI's run_spec with its options): one module-level function calls run_one.
        remote = ray.remote(_call).options(**{"num_cpus": 1, **options})
        queue = list(pending)
        in_flight: dict[Any, RunSpec] = {}
        while queue or in_flight:
            while queue and len(in_flight) < max_parallel:
                spec = queue.pop(0)
                in_flight[remote.remote(run_one, spec)] = spec
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            for ref in ready:
                spec = in_flight.pop(ref)
                try:
                    record = ray.get(ref)
                except Exception as error:  # reported in SweepError
                    tally.fail(spec, error)
                else:
                    tally.done(spec, record)
    finally:
        if started:
            ray.shutdown()


# -------------------------------------------------------------------------------------- Slurm
def _import_submitit() -> Any:
    """The submitit module.

    Raises:
        ImportError: it is not installed (one line naming :data:`SLURM_INSTALL`).
    """
    try:
        return importlib.import_module("submitit")
    except ImportError:
        raise ImportError(f"executor='slurm' needs submitit: {SLURM_INSTALL}") from None


def _slurm_executor(options: SlurmOptions, name: str) -> Any:
    """A ``submitit.AutoExecutor`` whose next job is named ``name``."""
    submitit = _import_submitit()
    executor = submitit.AutoExecutor(
        folder=str(Path(options.folder) / "%j"),
        cluster=options.cluster,
        slurm_max_num_timeout=options.requeues,
        local_max_num_timeout=options.requeues,
    )
    parameters: dict[str, Any] = {
        "name": name,
        "timeout_min": options.minutes,
        "nodes": 1,
        "tasks_per_node": 1,
        "cpus_per_task": options.cpus,
        "gpus_per_node": options.gpus,
        **({"slurm_partition": options.partition} if options.partition else {}),
        **options.parameters,
    }
    executor.update_parameters(**parameters)
    return executor


class _SlurmCall:
    """``run_one(spec)`` inside a Slurm job, one job at a time per run.

    A lock on ``<folder>/.running/<run_id>`` keeps two jobs of one run (left over by a driver
    that was killed, then started again) from training into the same work folder at once: the
    second waits, then resumes from the first one's checkpoint. A job that reaches its time
    limit or is preempted is requeued by submitit with the same call
    (``__submitit_checkpoint__``), and the run resumes from its last checkpoint.
    """

    def __init__(self, run_one: RunOne, folder: Path) -> None:
        self.run_one = run_one
        self.folder = Path(folder)

    def __call__(self, spec: RunSpec) -> RunRecord:
        import fcntl

        path = self.folder / ".running" / spec.run_id
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the handle closes or we die
            return self.run_one(spec)

    def __submitit_checkpoint__(self, spec: RunSpec) -> Any:
        """The same call again, for submitit to requeue (time limit or preemption)."""
        return _import_submitit().helpers.DelayedSubmission(self, spec)


def _idle(options: SlurmOptions) -> None:
    """The driver's pause between two looks at its jobs."""
    time.sleep(options.poll_seconds)


def _wait(job: Any, options: SlurmOptions) -> Any:
    """Poll ``job`` every ``poll_seconds`` until it has ended; the job."""
    while not job.done():
        _idle(options)
    return job


def _short(error: BaseException, limit: int = 400) -> str:
    """An exception's message on one line, cut at ``limit`` characters (sbatch's and
    submitit's messages can list every valid parameter)."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _job_error(job: Any, error: BaseException) -> str:
    """A failed job in one line: the run's own exception when it raised one, else how the job
    ended; and where its log is."""
    text = str(error)
    parts = text.split("-" * 22)
    if len(parts) >= 3:  # submitit's FailedJobError: the run's traceback between dashed lines
        lines = [line.strip() for line in parts[1].splitlines() if line.strip()]
        what = lines[-1] if lines else "failed"
    elif "has not produced any output" in text:
        what = (
            f"the job ended without a result (state {job.state}: cancelled, killed, out of "
            "memory or out of time); a new sweep resumes it from its checkpoint"
        )
    else:
        what = _short(error)
    return f"{what} (Slurm job {job.job_id}, log {job.paths.stderr})"


def _run_slurm(
    pending: list[RunSpec],
    run_one: RunOne,
    tally: _Tally,
    max_parallel: int,
    options: SlurmOptions,
) -> None:
    call = _SlurmCall(run_one, Path(options.folder))
    queue = list(pending)
    in_flight: dict[str, tuple[Any, RunSpec]] = {}
    try:
        while queue or in_flight:
            while queue and len(in_flight) < max_parallel:
                spec = queue.pop(0)
                name = f"{options.name}-{spec.task}-{spec.run_id}"
                try:
                    job = _slurm_executor(options, name).submit(call, spec)
                except Exception as error:  # sbatch refused it: reported in SweepError
                    tally.fail(spec, SlurmJobError(f"submission failed: {_short(error)}"))
                    continue
                logger.info("run %s: Slurm job %s", spec.run_id, job.job_id)
                in_flight[spec.run_id] = (job, spec)
            ended = [rid for rid, (job, _) in in_flight.items() if job.done()]
            if not ended:
                _idle(options)
            for rid in ended:
                job, spec = in_flight.pop(rid)
                try:
                    record = job.result()
                except Exception as error:  # reported in SweepError
                    tally.fail(spec, SlurmJobError(_job_error(job, error)))
                else:
                    tally.done(spec, record)
    finally:
        for job, spec in in_flight.values():  # interrupted: no job trains on unclaimed
            logger.warning("cancelling Slurm job %s (run %s)", job.job_id, spec.run_id)
            try:
                job.cancel(check=False)
            except Exception as error:  # the job may have ended meanwhile
                logger.warning("could not cancel Slurm job %s: %s", job.job_id, error)
            tally._release(spec.run_id)
