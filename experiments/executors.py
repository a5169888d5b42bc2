"""Run a sweep (a list of :class:`~experiments.spec.RunSpec`) locally or on Ray.

:func:`run_sweep` reuses every spec whose stored record still stands for it ("a rerun skips
finished runs"): with ``identify``, only a record whose recorded identity matches the identity
the run would have now (:func:`experiments.identity.reuse_differences`: data, representation,
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
from typing import Any, Literal

from experiments.identity import RunIdentity, reuse_differences
from experiments.spec import RunSpec
from experiments.store import REPO_ROOT, Claim, ResultsStore, RunExistsError, RunRecord

logger = logging.getLogger(__name__)

Executor = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")
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
) -> SweepResult:
    """Run every spec without a usable stored record and store the records.

    Args:
        specs: the sweep; duplicates (same run_id) run once.
        run_one: trains one spec and returns its record (``record.spec`` must equal the spec).
        store: where finished runs are looked up and put.
        executor: ``"local"`` or ``"ray"``.
        address: Ray cluster address (``"auto"``, ``"ray://host:10001"``); ``None`` starts a
            local 2-CPU Ray unless Ray is already initialised. Only for ``executor="ray"``.
        max_parallel: runs in flight at once.
        ray_options: options of each Ray task, e.g. ``{"num_gpus": 1}`` (default: 1 CPU).
        on_event: progress callback, one call per run (see :data:`OnEvent`).
        identify: the identity a run of a spec would have now
            (:func:`experiments.identity.run_identity` with the run options); ``None``: any
            stored record counts as finished (no identity check).
        reuse: :data:`Reuse` policy.

    Returns:
        What ran, what was skipped, reused stale, replaced and what failed.

    Raises:
        SweepError: after all other runs finished and were stored, if any run failed.
    """
    _check_sweep_options(executor, address, max_parallel, reuse)
    unique: dict[str, RunSpec] = {}
    for spec in specs:
        unique.setdefault(spec.run_id, spec)
    tally = _Tally(store, skipped=[], on_event=on_event)
    identities = {rid: identify(spec) for rid, spec in unique.items()} if identify else {}
    pending = [s for s in unique.values() if tally.needs_run(s, identities.get(s.run_id), reuse)]
    logger.info(
        "sweep: %d runs, %d to do, %d stored", len(unique), len(pending), len(tally.skipped)
    )
    waited: list[RunSpec] = []
    while pending:
        mine = tally.claim(pending, waited, identities, reuse)
        if mine:
            _execute(mine, run_one, tally, executor, address, max_parallel, ray_options)
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
) -> None:
    if executor == "ray":
        _run_ray(pending, run_one, tally, address, max_parallel, ray_options or {})
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
