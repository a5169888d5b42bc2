"""Progress bars only on a terminal.

A tqdm bar redraws itself with carriage returns: on a terminal that is one moving line, in a
log file (``nohup``, a Slurm job's ``.err`` file, CI) it is thousands of ``\\r``-joined
fragments. Every bar of the harness therefore asks :func:`bars_enabled` first: a bar is drawn
only when it was asked for *and* stderr is an interactive terminal (or a notebook, whose
widget bars write no carriage returns). Where bars are off, the training loop prints one line
per evaluation instead (``RunOptions.eval_lines``).
"""

from __future__ import annotations

import sys
from typing import IO, Any

__all__ = ["bars_enabled", "on_terminal", "progress_bar"]


def on_terminal(stream: IO[str] | None = None) -> bool:
    """Whether ``stream`` (default: the current ``sys.stderr``) shows bars as they are meant to
    be seen: an interactive terminal, or a Jupyter kernel's output stream.

    A missing stream (``pythonw``), a closed one or one without ``isatty`` counts as no
    terminal.
    """
    stream = sys.stderr if stream is None else stream
    if stream is None:
        return False
    if type(stream).__module__.startswith("ipykernel"):  # tqdm.auto draws a widget there
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (ValueError, OSError):  # a closed or detached stream
        return False


def bars_enabled(progress: bool) -> bool:
    """Whether to draw a bar: ``progress`` asked for and stderr :func:`on_terminal`."""
    return progress and on_terminal()


def progress_bar(progress: bool, **options: Any) -> Any:
    """A ``tqdm.auto`` bar on stderr, disabled (every call a no-op, nothing written) unless
    :func:`bars_enabled`.

    Args:
        progress: the caller's wish (e.g. not ``--quiet``).
        **options: tqdm's own (``total``, ``desc``, ``unit``, ``leave``, ...).
    """
    from tqdm.auto import tqdm

    return tqdm(disable=not bars_enabled(progress), **options)
