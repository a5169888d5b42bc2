"""Run a sweep (a list of :class:`~experiments.spec.RunSpec`) locally or on Ray.

:func:`run_sweep` skips every spec whose run_id the store already holds ("a rerun skips finished
runs"), runs the rest through a caller-supplied ``run_one(spec) -> RunRecord`` and puts each
record into the store **from the driver** as soon as it arrives, so an interrupted sweep keeps
everything finished so far and the next call resumes. One failing run does not stop the others;
the failures are reported together at the end (:class:`SweepError`).

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

from experiments.spec import RunSpec
from experiments.store import REPO_ROOT, ResultsStore, RunExistsError, RunRecord

logger = logging.getLogger(__name__)

Executor = Literal["local", "ray"]
EXECUTORS: tuple[str, ...] = ("local", "ray")
LOCAL_RAY_CPUS = 2
RunOne = Callable[[RunSpec], RunRecord]
#: Called once per run of a sweep: ``(status, spec, detail)`` with status ``"stored"`` (already
#: in the store), ``"done"`` or ``"failed"``; detail is the error message of a failure.
OnEvent = Callable[[str, RunSpec, str], None]


@dataclass(frozen=True)
class SweepResult:
    """What a sweep did, by run_id (each in the order of the given specs).

    Attributes:
        ran: run and stored by this call.
        skipped: already stored (before the call, or by a concurrent writer meanwhile).
        failed: run_id → error message, for runs that raised or returned a wrong record.
    """

    ran: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    failed: Mapping[str, str] = field(default_factory=dict)


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
) -> SweepResult:
    """Run every spec not yet in ``store`` and store the records.

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

    Returns:
        What ran, what was skipped and what failed.

    Raises:
        SweepError: after all other runs finished and were stored, if any run failed.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
    if max_parallel < 1:
        raise ValueError(f"max_parallel must be >= 1, got {max_parallel}")
    if address is not None and executor != "ray":
        raise ValueError("address is only used with executor='ray'")
    unique: dict[str, RunSpec] = {}
    for spec in specs:
        unique.setdefault(spec.run_id, spec)
    pending = [spec for rid, spec in unique.items() if not store.has(rid)]
    tally = _Tally(store, skipped=[rid for rid in unique if store.has(rid)], on_event=on_event)
    if on_event is not None:
        for rid in tally.skipped:
            on_event("stored", unique[rid], "")
    logger.info(
        "sweep: %d runs, %d to do, %d stored", len(unique), len(pending), len(tally.skipped)
    )
    if pending:
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
    result = tally.result(order=list(unique))
    if result.failed:
        raise SweepError(result)
    return result


@dataclass
class _Tally:
    store: ResultsStore
    skipped: list[str]
    ran: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    on_event: OnEvent | None = None

    def done(self, spec: RunSpec, record: object) -> None:
        rid = spec.run_id
        if not isinstance(record, RunRecord) or record.spec != spec:
            got = record.run_id if isinstance(record, RunRecord) else type(record).__name__
            self.failed[rid] = f"run_one returned a record for {got}, not for {rid}"
            return
        try:
            self.store.put(record)
        except RunExistsError:
            logger.info("run %s was stored meanwhile by another writer; keeping that one", rid)
            self.skipped.append(rid)
        except Exception as error:  # reported in SweepError
            self.fail(spec, error)
        else:
            logger.info("stored run %s", rid)
            self.ran.append(rid)
            if self.on_event is not None:
                self.on_event("done", spec, "")

    def fail(self, spec: RunSpec, error: BaseException) -> None:
        logger.error("run %s failed: %r", spec.run_id, error)
        self.failed[spec.run_id] = f"{type(error).__name__}: {error}"
        if self.on_event is not None:
            self.on_event("failed", spec, self.failed[spec.run_id])

    def result(self, order: list[str]) -> SweepResult:
        rank = {rid: i for i, rid in enumerate(order)}
        return SweepResult(
            ran=tuple(sorted(self.ran, key=rank.__getitem__)),
            skipped=tuple(sorted(self.skipped, key=rank.__getitem__)),
            failed={rid: self.failed[rid] for rid in sorted(self.failed, key=rank.__getitem__)},
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
