"""One thread instead of an OpenMP team while another process competes for this process's cores.

The biLM's recurrent loop is hundreds of small GEMMs a second, each split over an OpenMP team
that meets at a barrier. When another process takes one of the team's cores, every product
waits for the thread that shares that core: on 2 cores with one busy background process the
2-thread biLM fell to 0.35 × its idle speed, while 1 thread kept 0.94 × its own idle speed
(``benchmarks/bench_bilm.py``, "under load"; docs/performance.md, "On a shared server").

:func:`threads_under_load` watches this from inside a forward pass, at no cost when the
machine is idle (two small ``/proc`` reads every few steps):

* at the process's thread count, it reads how long this process's threads waited for a CPU
  (Linux ``/proc/self/task/*/schedstat``, run-queue delay); when the threads waited at least
  :data:`WAIT_FRACTION` of a window of at least :data:`WINDOW_FULL` seconds, the rest of the
  pass, and the next passes, run on one thread;
* on one thread, it reads how much CPU time the other processes took on the CPUs this process
  may run on (``/proc/stat`` minus this process's own time); when, over at least
  :data:`WINDOW_REDUCED` seconds, they left room for the full team (they used at most
  :data:`OTHERS_BUSY` CPUs beyond those the team does not need), it returns to the process's
  thread count.

Results do not depend on the choice: the biLM's fp32 products are bit-identical at 1 and at 2
threads (``tests/bilm/test_load.py``). The caller's thread count is restored when the pass ends.
``ELMO_BENCH_UNDER_LOAD=keep`` turns the rule off; it is also off where ``/proc`` lacks these
files (not Linux), on GPUs, with one thread, and under autograd (training keeps its threads).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import torch

__all__ = [
    "OTHERS_BUSY",
    "UNDER_LOAD_ENV",
    "WAIT_FRACTION",
    "WINDOW_FULL",
    "WINDOW_REDUCED",
    "check_load",
    "reduced",
    "threads_under_load",
]

#: Environment variable: ``adapt`` (default) or ``keep`` (never change the thread count).
UNDER_LOAD_ENV = "ELMO_BENCH_UNDER_LOAD"
#: Run-queue wait of this process's threads, as a fraction of a window's wall time, from which
#: the pass drops to one thread. Idle, the 2-thread biLM waits < 1 % (measured here); with one
#: busy process on the other core, the thread there waits about half the time.
WAIT_FRACTION = 0.2
#: Shortest window (seconds) judged at the full thread count.
WINDOW_FULL = 0.05
#: CPUs that other processes may keep busy (beyond those the full team leaves free) for the
#: pass to return to the full thread count: one busy process counts 1.0, an idle machine ~0.
OTHERS_BUSY = 0.25
#: Shortest window (seconds) judged on one thread (``/proc/stat`` counts in 10 ms ticks).
WINDOW_REDUCED = 0.2
#: Recurrent steps between two checks (:func:`check_load`).
CHECK_EVERY = 4

_PROC = Path("/proc")


class _Process:
    """What this process knows across passes: whether it runs reduced now."""

    reduced = False


class _Guard:
    """The window being watched inside one pass."""

    def __init__(self, full: int) -> None:
        self.full = full
        self.cpus = sorted(os.sched_getaffinity(0))
        self.tick = 1.0 / os.sysconf("SC_CLK_TCK")
        self._start_window()

    def _start_window(self) -> None:
        self.t0 = time.perf_counter()
        self.wait0 = _run_delay_ns() if not _Process.reduced else None
        self.busy0 = _busy_ticks(self.cpus) if _Process.reduced else None
        self.own0 = time.process_time()

    def _set(self, threads: int) -> None:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    def check(self, final: bool = False) -> None:
        """Judge the window if it is long enough; switch and open a new one if needed."""
        wall = time.perf_counter() - self.t0
        if not _Process.reduced:
            if wall < WINDOW_FULL or self.wait0 is None:
                return
            wait = _run_delay_ns()
            if wait is not None and (wait - self.wait0) * 1e-9 >= WAIT_FRACTION * wall:
                _Process.reduced = True
                if not final:
                    self._set(1)
        else:
            if wall < WINDOW_REDUCED or self.busy0 is None:
                return
            ticks = _busy_ticks(self.cpus)
            if ticks is not None:
                busy = (ticks - self.busy0) * self.tick  # CPU-seconds, all processes
                others = (busy - (time.process_time() - self.own0)) / wall  # CPUs
                if others <= max(0, len(self.cpus) - self.full) + OTHERS_BUSY:
                    _Process.reduced = False
                    if not final:
                        self._set(self.full)
        self._start_window()


_ACTIVE: list[_Guard] = []


def _run_delay_ns() -> int | None:
    """Total run-queue wait of this process's threads so far (ns), or None if unreadable."""
    total = 0
    try:
        for task in (_PROC / "self" / "task").iterdir():
            fields = (task / "schedstat").read_text().split()
            total += int(fields[1])
    except (OSError, ValueError, IndexError):
        return None
    return total


def _busy_ticks(cpus: list[int]) -> int | None:
    """Busy ticks so far of the given CPUs (``/proc/stat``: every field up to steal but idle
    and iowait), or None if unreadable."""
    wanted = {f"cpu{c}" for c in cpus}
    busy = 0
    try:
        for line in (_PROC / "stat").read_text().splitlines():
            name, _, rest = line.partition(" ")
            if name in wanted:
                values = [int(v) for v in rest.split()[:8]]  # user … steal
                busy += sum(values) - values[3] - values[4]
    except (OSError, ValueError, IndexError):
        return None
    return busy


def reduced() -> bool:
    """Whether this process's biLM passes run on one thread now (another process was found
    competing for its cores and has not yet been seen gone)."""
    return _Process.reduced


def check_load() -> None:
    """Called by the recurrent loop every :data:`CHECK_EVERY` steps; a no-op outside
    :func:`threads_under_load`."""
    if _ACTIVE:
        _ACTIVE[-1].check()


@contextlib.contextmanager
def threads_under_load(device: torch.device) -> Iterator[None]:
    """Run the enclosed inference pass under the rule of this module (see its docstring).

    Args:
        device: where the pass runs; anything but the CPU leaves the threads alone.
    """
    full = torch.get_num_threads()
    enabled = (
        device.type == "cpu"
        and full > 1
        and not torch.is_grad_enabled()
        and not _ACTIVE  # nested passes: the outer one decides
        and os.environ.get(UNDER_LOAD_ENV, "adapt").strip().lower() != "keep"
        and _run_delay_ns() is not None
        and _busy_ticks(sorted(os.sched_getaffinity(0))) is not None
    )
    if not enabled:
        yield
        return
    if _Process.reduced:
        torch.set_num_threads(1)
    guard = _Guard(full)
    _ACTIVE.append(guard)
    try:
        yield
        guard.check(final=True)
    finally:
        _ACTIVE.pop()
        if torch.get_num_threads() != full:
            torch.set_num_threads(full)
