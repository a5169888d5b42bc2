"""Atomic file writes: a reader (or a process that resumes after a kill) sees the old file or
the new one, never half of one.

Every write goes to a hidden temporary sibling (``.NAME.tmp-PID-RANDOM``, so concurrent writers
never share one), is flushed and fsync'ed, then renamed over the target with :func:`os.replace`
(atomic on one file system). On any error the temporary file is removed and the target is left
as it was. A write that runs out of disk space (``ENOSPC``, or a quota's ``EDQUOT``; also when it
reaches the writer through another error, as torch's ``RuntimeError: [enforce fail …]
unexpected pos`` does) raises :class:`NoSpaceError`: one line naming the target and saying there
is no space left.

A process killed mid-write (``kill -9``) leaves its temporary sibling behind;
:func:`remove_stale_temporaries` removes those of one target that no process uses any more (the
rule is in its docstring).

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

import errno
import os
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = [
    "NO_SPACE",
    "NoSpaceError",
    "atomic_path",
    "atomic_write",
    "out_of_space",
    "remove_stale_temporaries",
    "save_torch",
    "temporary_sibling",
    "write_bytes",
    "write_json",
    "write_text",
]


#: How every write that ran out of space says so (the results store's messages too).
NO_SPACE = "no space left on the device"
_FULL = (errno.ENOSPC, errno.EDQUOT)


class NoSpaceError(OSError):
    """A write ran out of disk space (or quota); the target is as it was, no temporary is left.

    ``errno`` is the system's (``ENOSPC`` or ``EDQUOT``), :attr:`path` the target, and the
    message (``str()`` and ``args[0]``) one line: ``could not write PATH: no space left on the
    device; …``.
    """

    def __init__(self, path: str | os.PathLike[str], code: int = errno.ENOSPC) -> None:
        super().__init__(
            f"could not write {path}: {NO_SPACE}; it is as it was (the partial file was "
            "removed): free space and try again"
        )
        self.errno = code
        self.path = Path(path)

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its path and errno (it crosses process boundaries: worker pools, Ray)."""
        return type(self), (str(self.path), self.errno)


def out_of_space(error: BaseException) -> OSError | None:
    """The ``ENOSPC``/``EDQUOT`` :class:`OSError` behind ``error``: ``error`` itself, or one in
    its chain of causes and contexts (torch, h5py and others raise their own error while the
    system's is their context); ``None`` when the disk was not full."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL:
            return current
        current = current.__cause__ or current.__context__
    return None


def temporary_sibling(path: str | os.PathLike[str]) -> Path:
    """A fresh hidden name beside ``path`` (same folder, so a rename onto ``path`` is atomic):
    ``.NAME.tmp-PID-RANDOM`` (the writer's process id, 8 hex digits)."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _temporary_pattern(path: Path) -> re.Pattern[str]:
    """The names :func:`temporary_sibling` gives temporaries of ``path`` (group 1: the PID)."""
    return re.compile(re.escape(f".{path.name}.tmp-") + r"([0-9]+)-[0-9a-f]{8}")


def _process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (one of another user counts)."""
    if pid <= 0:
        return True  # not a real process id: never treat the file as abandoned
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, only whether the process exists
    except (ProcessLookupError, OverflowError):  # none (or beyond any process id)
        return False
    except PermissionError:  # another user's process
        pass
    return True


def _unlocked(fd: int) -> bool:
    """Take an exclusive ``flock`` on ``fd`` without waiting; ``False`` when another process
    holds one (the lock taken is released when ``fd`` is closed)."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError: held elsewhere; others: cannot tell, so keep the file
        return False
    return True


def remove_stale_temporaries(path: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporaries a killed writer of ``path`` left beside it; returns them.

    The rule: a file beside ``path`` is removed only when (1) its name is one
    :func:`temporary_sibling` gives ``path`` (``.NAME.tmp-PID-RANDOM``, nothing else: not the
    temporaries of another file, not other hidden files), (2) it is a regular file, not a link,
    (3) no process with that PID runs on this machine (this process's own temporaries are
    never touched), and (4) no process holds an ``flock`` on it (checked without waiting; the
    check holds the lock while it removes the file). HDF5 holds such a lock on a file it
    writes (unless ``HDF5_USE_FILE_LOCKING=FALSE``), so an HDF5 temporary that a process in
    another PID namespace, or on another machine sharing the folder, is writing is kept. A
    killed process holds no lock (the kernel releases it). Without ``fcntl`` (Windows)
    nothing is removed.

    Args:
        path: the target whose temporaries are looked for (it need not exist).

    Returns:
        The files removed.
    """
    path = Path(path)
    pattern = _temporary_pattern(path)
    removed: list[Path] = []
    if os.name != "posix":  # pragma: no cover - no flock: nothing is known to be abandoned
        return removed
    try:
        entries = sorted(path.parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None or entry.is_symlink() or not entry.is_file():
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _process_alive(pid):
            continue
        try:
            fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            if _unlocked(fd):  # nobody writes it: the lock is ours while the file is removed
                entry.unlink(missing_ok=True)
                removed.append(entry)
        finally:
            os.close(fd)
    return removed


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

    Raises:
        NoSpaceError: the disk (or quota) was full; ``path`` is as it was.
    """
    path = Path(path)
    tmp = temporary_sibling(path)
    try:
        yield tmp
        if fsync:
            _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException as error:
        full = out_of_space(error)
        if full is None or isinstance(error, NoSpaceError):
            raise
        raise NoSpaceError(path, full.errno or errno.ENOSPC) from error
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

    Raises:
        NoSpaceError: the disk (or quota) was full; ``path`` is as it was.
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
    """Atomically ``torch.save`` ``payload`` to ``path``; returns ``path``.

    Raises:
        NoSpaceError: the disk (or quota) was full (torch's own ``RuntimeError`` is its
            cause); ``path`` is as it was and no temporary file is left.
    """
    import torch

    with atomic_write(path) as handle:
        torch.save(payload, handle)
    return Path(path)
