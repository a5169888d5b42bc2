"""The command line in a second process, slowed down so that a test can interrupt it mid-run:
``python -m tests.experiments.cli_workers SECONDS ARGS...`` runs
``experiments.cli.main(ARGS)`` with a pause of SECONDS before every training batch (the
numbers a run produces do not change: nothing random is drawn in the pause)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from experiments.cli import main as cli_main
from experiments.run import runner
from experiments.run.setup import Run


def main(argv: Sequence[str]) -> int:
    """Slow every batch down by ``argv[0]`` seconds, then run the command line ``argv[1:]``."""
    delay = float(argv[0])
    real = runner._train_batch

    def slow(run: Run, state: runner.LoopState, batch: object) -> None:
        time.sleep(delay)
        real(run, state, batch)

    runner._train_batch = slow  # type: ignore[assignment]
    return cli_main(list(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
