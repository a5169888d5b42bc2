"""The command line's one error policy: what a mistake prints and which exit status it gets.

* **A user mistake** (a bad flag value, an unknown task, preset or representation, a ``--set``
  key that does not exist, missing data, a device that is not there): one line
  ``error: ...`` on stderr, exit status 2, and no run starts. Argument parsing errors follow
  the same rule (:class:`Parser`).
* **A failed run** (:class:`~experiments.run.executors.SweepError`: the other runs are stored):
  ``error: N of M runs failed`` and one line per failed run id, exit status 1.
* **Ctrl-C** (``KeyboardInterrupt``): the line :data:`INTERRUPTED`, exit status 130; finished
  runs are stored and the interrupted one resumes from its checkpoint.

Commands raise; only :func:`exit_status` (called by :func:`experiments.cli.main`) prints.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from experiments.run.errors import one_line
from experiments.run.executors import SweepError

__all__ = ["INTERRUPTED", "USER_MISTAKES", "Parser", "UsageError", "exit_status", "one_line"]

#: What Ctrl-C prints (exit status 130).
INTERRUPTED = "interrupted; rerun the same command to resume"


class UsageError(Exception):
    """A command-line mistake found before any run starts (exit status 2)."""


#: Exceptions that mean the input was wrong: ``ValueError`` and ``KeyError`` from configuring a
#: task or a representation (``DeviceError`` and the readers' data errors are ``ValueError``\s),
#: ``FileNotFoundError`` for missing data. (A ``TypeError`` is a mistake only where a command
#: checks the user's options, which then raises :class:`UsageError`; elsewhere it is a bug.)
USER_MISTAKES: tuple[type[BaseException], ...] = (
    UsageError,
    ValueError,
    KeyError,
    FileNotFoundError,
)


def exit_status(error: BaseException) -> int | None:
    """Print ``error`` as the policy says and return its exit status (``None``: not ours).

    Args:
        error: what a command raised.

    Returns:
        1 for a failed run, 2 for a user mistake, 130 for Ctrl-C, ``None`` for anything else
        (a bug: the caller re-raises it, so its traceback is shown).
    """
    if isinstance(error, KeyboardInterrupt):
        print(INTERRUPTED, file=sys.stderr)
        return 130
    if isinstance(error, SweepError):  # names every failed run id, one per line
        print(f"error: {error}", file=sys.stderr)
        return 1
    if isinstance(error, USER_MISTAKES):
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 2
    return None


class Parser(argparse.ArgumentParser):
    """``argparse`` whose errors are one line (``error: …``, exit status 2), no usage block."""

    def error(self, message: str) -> NoReturn:
        """Print ``error: <prog>: <message> (see --help)`` and exit with status 2."""
        self.exit(2, f"error: {self.prog}: {message} (see --help)\n")
