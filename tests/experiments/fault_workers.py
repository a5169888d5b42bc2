"""Module-level run functions for the fault tests (picklable: Ray and spawned workers import
them). Each registers the toy task in its own process before running."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from experiments.run import runner
from experiments.run.setup import Run
from experiments.run.spec import RunSpec
from experiments.run.store import RunRecord
from tests.experiments.toy_task import make_task


def run_toy(
    spec: RunSpec, options: runner.RunOptions, demo: Path, kill: str | None = None
) -> RunRecord:
    """``run_spec`` of a toy spec in a worker; the run whose id is ``kill`` SIGKILLs its own
    worker process after 17 optimizer steps, once (a marker file in the work folder remembers
    it), after the checkpoint of step 14 was written."""
    from tasks import registry

    registry.TASKS.setdefault("toy", make_task(demo))
    marker = Path(options.work_root) / f"killed-{spec.run_id}"
    if spec.run_id == kill and not marker.exists():
        real = runner._train_batch
        count = {"n": 0}

        def killing(run: Run, state: runner.LoopState, batch: object) -> None:
            count["n"] += 1
            if count["n"] == 17:
                marker.write_text(str(os.getpid()), encoding="utf-8")
                os.kill(os.getpid(), signal.SIGKILL)
            real(run, state, batch)

        runner._train_batch = killing  # type: ignore[assignment]
    return runner.run_spec(spec, options)


def sleepy(spec: RunSpec, folder: Path) -> RunRecord:
    """Write this worker's pid, then sleep far longer than any test waits."""
    import time

    (folder / spec.run_id).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(600)
    raise AssertionError("should have been stopped")
