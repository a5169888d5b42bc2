"""Atomic file writes: a reader (or a process that resumes after a kill) sees the old file or
the new one, never half of one.

Every write goes to a hidden temporary sibling (``.NAME.tmp-PID-RANDOM``, so concurrent writers
never share one), is flushed and fsync'ed, then renamed over the target with :func:`os.replace`
(atomic on one file system). On any error the temporary file is removed and the target is left
as it was.

Example::

    from bilm.files import atomic_path, atomic_write, save_torch, write_text

    write_text(out / "metrics.json", json.dumps(metrics))
    with atomic_write(out / "notes.bin") as handle:  # a binary handle
        handle.write(data)
    save_torch(state, out / "checkpoint.pt")
    with atomic_path(out / "vectors.hdf5") as tmp:  # for writers that want a file name
        with h5py.File(tmp, "w") as sink:
            ...
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = [
    "atomic_path",
    "atomic_write",
    "save_torch",
    "temporary_sibling",
    "write_bytes",
    "write_json",
    "write_text",
]


def temporary_sibling(path: str | os.PathLike[str]) -> Path:
    """A fresh hidden name beside ``path`` (same folder, so a rename onto ``path`` is atomic)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: str | os.PathLike[str], *, fsync: bool = True) -> Iterator[Path]:
    """Yield a temporary name whose file replaces ``path`` when the block exits cleanly.

    For writers that take a file name rather than a handle (h5py, safetensors). The block must
    close the file it writes before it exits.

    Args:
        path: the file to (re)place; its folder must exist.
        fsync: flush the finished file to disk before the rename.

    Yields:
        A hidden sibling of ``path`` that does not exist yet.
    """
    path = Path(path)
    tmp = temporary_sibling(path)
    try:
        yield tmp
        if fsync:
            _fsync_file(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_write(path: str | os.PathLike[str], *, fsync: bool = True) -> Iterator[IO[bytes]]:
    """Open a binary handle whose content replaces ``path`` when the block exits cleanly.

    Args:
        path: the file to (re)place; its folder must exist.
        fsync: flush the data to disk before the rename (off only for throw-away files).

    Yields:
        A binary file handle on a temporary sibling of ``path``.
    """
    with atomic_path(path, fsync=False) as tmp, tmp.open("wb") as handle:
        yield handle
        handle.flush()
        if fsync:
            os.fsync(handle.fileno())


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Atomically write ``data`` to ``path``; returns ``path``."""
    with atomic_write(path) as handle:
        handle.write(data)
    return Path(path)


def write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Atomically write ``text`` (``\\n`` line endings kept as given) to ``path``; returns it."""
    return write_bytes(path, text.encode(encoding))


def write_json(
    path: str | os.PathLike[str],
    data: Any,
    *,
    indent: int | None = None,
    default: Callable[[Any], Any] | None = None,
) -> Path:
    """Atomically write ``data`` as JSON (with a final newline when ``indent`` is set)."""
    import json

    text = json.dumps(data, indent=indent, default=default)
    return write_text(path, text + "\n" if indent is not None else text)


def save_torch(payload: Any, path: str | os.PathLike[str]) -> Path:
    """Atomically ``torch.save`` ``payload`` to ``path``; returns ``path``."""
    import torch

    with atomic_write(path) as handle:
        torch.save(payload, handle)
    return Path(path)
