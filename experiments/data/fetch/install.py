"""Fetch, convert and install real sets below a data root, one set at a time, atomically.

A set is built in a hidden folder beside its place (``<root>/real/.litbank-coref.partial-…``),
checked against the manifest's digest of the converted set, and only then renamed into place:
an interrupted or failed fetch leaves no half-written set (its leftovers are removed by the next
fetch into the same root). A set whose folder already has the pinned digest is complete and is
not fetched again; a folder that exists with other content is replaced only when asked
(``force``). One fetch at a time writes to a root (a lock file, ``<root>/.real-data.lock``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bilm.pretrained import sha256_of
from experiments.data.fetch.convert import CONVERTERS
from experiments.data.fetch.manifest import Manifest, ManifestError, SetSources, SourceFile
from experiments.data.fetch.sources import gather

__all__ = [
    "ConversionMismatch",
    "SetState",
    "TermsNotAccepted",
    "accept_hint",
    "build_set",
    "default_cache",
    "fetch",
    "set_state",
    "tree_digest",
    "tree_listing",
]

LOCK_NAME = ".real-data.lock"
State = Literal["complete", "missing", "differs"]


class ConversionMismatch(ValueError):
    """A converted set is not the one the manifest pins (nothing was installed)."""


@dataclass(frozen=True)
class SetState:
    """Where one set stands below a data root.

    Attributes:
        name: the set.
        folder: its folder below the root.
        state: ``complete`` (the pinned digest), ``missing`` (no folder) or ``differs``.
        files: the files found in its folder.
    """

    name: str
    folder: Path
    state: State
    files: int


def default_cache() -> Path:
    """Where downloads are kept: ``<project cache>/shared/sources`` (beside the default root,
    ``<project cache>/shared/data``; ``$ELMO_BENCH_CACHE``, else ``~/.cache/elmo-bench``)."""
    from bilm.pretrained import cache_root

    return cache_root() / "shared" / "sources"


def tree_listing(folder: Path) -> list[tuple[str, str]]:
    """``(relative path, sha256)`` of every file below ``folder``, sorted by path; hidden files
    and folders (a name starting with ``.``) left out, as run identities leave them out."""
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found.append((relative.as_posix(), sha256_of(path)))
    return sorted(found)


def tree_digest(folder: Path) -> tuple[int, str]:
    """``(number of files, digest)`` of a folder: the SHA-256 of its ``sha256sum``-style listing
    (``<sha256>  <relative path>`` per file, sorted by path; see :func:`tree_listing`)."""
    listing = tree_listing(folder)
    text = "".join(f"{digest}  {name}\n" for name, digest in listing)
    return len(listing), hashlib.sha256(text.encode("utf-8")).hexdigest()


def set_state(entry: SetSources, root: Path) -> SetState:
    """Whether ``entry``'s folder below ``root`` is complete (has the pinned digest)."""
    folder = root / entry.folder
    if not folder.is_dir():
        return SetState(entry.name, folder, "missing", 0)
    count, digest = tree_digest(folder)
    complete = (count, digest) == (entry.output_files, entry.output_sha256)
    return SetState(entry.name, folder, "complete" if complete else "differs", count)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """Hold ``root``'s lock file for the block (another fetch into it is refused)."""
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): one fetch at a time is on the user
        yield
        return
    with (root / LOCK_NAME).open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ValueError(f"another real-data fetch is writing to {root}; wait for it") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_leftovers(folder: Path) -> None:
    """Remove what an interrupted build of ``folder`` left beside it."""
    for pattern in (f".{folder.name}.partial-*", f".{folder.name}.old-*"):
        for leftover in folder.parent.glob(pattern):
            shutil.rmtree(leftover, ignore_errors=True)


def build_set(entry: SetSources, files: Mapping[SourceFile, Path], folder: Path) -> int:
    """Convert ``entry`` from its verified ``files`` and put it at ``folder``, atomically.

    Returns:
        The number of files written.

    Raises:
        ConversionMismatch: the converted set is not the pinned one (``folder`` untouched).
        FormatError: a malformed source (``folder`` untouched).
        KeyError: the entry names no known converter.
    """
    if entry.converter not in CONVERTERS:
        raise KeyError(f"{entry.name}: no converter {entry.converter!r} ({', '.join(CONVERTERS)})")
    folder.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(folder)
    staging = folder.with_name(f".{folder.name}.partial-{os.getpid()}-{secrets.token_hex(4)}")
    staging.mkdir()  # the user's umask applies (mkdtemp's would leave the set private)
    old: Path | None = None
    try:
        CONVERTERS[entry.converter]({file.path: local for file, local in files.items()}, staging)
        count, digest = tree_digest(staging)
        if (count, digest) != (entry.output_files, entry.output_sha256):
            raise ConversionMismatch(
                f"{entry.name}: the converted set ({count} files, sha256 {digest}) is not the "
                f"pinned one ({entry.output_files} files, {entry.output_sha256}); nothing was "
                "written (the sources matched their checksums: please report this)"
            )
        if folder.exists():
            old = folder.with_name(f".{folder.name}.old-{os.getpid()}")
            folder.rename(old)
        try:
            staging.rename(folder)
        except BaseException:
            if old is not None:
                old.rename(folder)
                old = None
            raise
        return count
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        with contextlib.suppress(OSError):
            folder.parent.rmdir()  # only when empty: a failed first fetch leaves no folder


def _sources_text(entry: SetSources) -> str:
    return ", ".join(repo.short for repo in entry.repositories)


def accept_hint(entry: SetSources) -> str:
    """How to fetch a set whose terms must be acknowledged."""
    return f"to fetch it, read its terms and add --accept-terms {entry.name}"


class TermsNotAccepted(ValueError):
    """A set whose text may not be redistributed was asked for without its terms accepted."""

    def __init__(self, entry: SetSources) -> None:
        super().__init__(
            f"{entry.name} is not fetched without --accept-terms {entry.name}: {entry.terms}"
        )
        self.entry = entry


def fetch(
    manifest: Manifest,
    names: Sequence[str] | None = None,
    *,
    root: Path,
    source: Path | None = None,
    cache: Path | None = None,
    force: bool = False,
    accepted: Collection[str] = (),
    log: Callable[[str], None] = print,
) -> list[SetState]:
    """Fetch, convert and install sets below ``root``; complete sets are kept.

    A set with :attr:`~experiments.data.fetch.manifest.SetSources.terms` is fetched only when
    its name is in ``accepted``: named in ``names`` without it, the fetch is refused
    (:class:`TermsNotAccepted`, quoting the terms); with ``names`` ``None`` it is left out with
    a line that says how to accept them.

    Args:
        manifest: the sources (:func:`~experiments.data.fetch.manifest.load_manifest`).
        names: the sets (default: all, in manifest order).
        root: the data root (each set at ``root / set.folder``).
        source: a local folder of the source files (nothing is downloaded).
        cache: where downloads are kept (default :func:`default_cache`).
        force: rebuild complete sets, and replace folders that differ.
        accepted: the sets whose terms the user acknowledged (``--accept-terms``).
        log: receives one progress line per step.

    Returns:
        Each set's state afterwards (all complete).

    Raises:
        KeyError: an unknown set name.
        TermsNotAccepted: a named set whose terms are not in ``accepted``.
        ManifestError: a selected set names no known converter.
        ValueError: a folder that differs (without ``force``), another fetch into ``root``,
            or a source that could not be had, is not the pinned version or is malformed
            (:class:`~experiments.data.fetch.sources.SourceError`,
            :class:`~experiments.data.fetch.convert.FormatError`, :class:`ConversionMismatch`).
    """
    entries = manifest.select(None if names is None else tuple(names))
    pending = [e for e in entries if e.terms and e.name not in accepted]
    if pending and names is not None:
        raise TermsNotAccepted(pending[0])
    for entry in pending:
        log(f"{entry.name}: left out: {entry.licence}; {accept_hint(entry)}")
    entries = [e for e in entries if e not in pending]
    for entry in entries:
        if entry.converter not in CONVERTERS:
            known = ", ".join(CONVERTERS)
            raise ManifestError(
                f"{manifest.path}: [sets.{entry.name}] converter {entry.converter!r} ({known})"
            )
    cache = default_cache() if cache is None else cache
    created = [p for p in (root, *root.parents) if not p.exists()]
    root.mkdir(parents=True, exist_ok=True)
    states: list[SetState] = []
    try:
        _fetch_locked(entries, root, source, cache, force, log, states)
    finally:
        if created and not any(s.state == "complete" for s in states):
            (root / LOCK_NAME).unlink(missing_ok=True)
            for folder in created:  # a first fetch that failed leaves no empty root behind
                with contextlib.suppress(OSError):
                    folder.rmdir()
    return states


def _fetch_locked(
    entries: Sequence[SetSources],
    root: Path,
    source: Path | None,
    cache: Path,
    force: bool,
    log: Callable[[str], None],
    states: list[SetState],
) -> None:
    """:func:`fetch`'s work under ``root``'s lock; appends each set's state to ``states``."""
    with _locked(root):
        before = [set_state(entry, root) for entry in entries]
        differ = [state for state in before if state.state == "differs"]
        if differ and not force:
            folders = ", ".join(str(state.folder) for state in differ)
            raise ValueError(
                f"{folders} exist(s) but not as pinned (other files or content): move it away, "
                "or rerun with --force to replace it"
            )
        for entry, state in zip(entries, before, strict=True):
            if state.state == "complete" and not force:
                log(f"{entry.name}: complete in {state.folder} ({state.files} files, verified)")
                states.append(state)
                continue
            where = f"from {source}" if source is not None else "downloading"
            count = len(entry.files)
            files_text = f"{count} source file{'s' if count != 1 else ''}"
            log(f"{entry.name}: {files_text} of {_sources_text(entry)}, {where}")
            files = gather(entry.files, source=source, cache=cache)
            written = build_set(entry, files, state.folder)
            log(f"{entry.name}: wrote {state.folder} ({written} files, verified)")
            states.append(SetState(entry.name, state.folder, "complete", written))
