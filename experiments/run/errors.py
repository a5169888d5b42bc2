"""How the harness words an error it passes on: one line, as the command line prints it."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(error: BaseException) -> str:
    """An exception's message on one line (a KeyError's without its quotes; an ``OSError``
    raised by the system as ``FILE: reason``, not its bare errno)."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return " ".join(f"{error.filename}: {error.strerror}".split())
    return " ".join(str(error.args[0] if error.args else error).split())
