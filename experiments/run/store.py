"""Append-only results store: the source of truth for every table (docs/harness.md).

Layout, one folder per run, keyed by :func:`experiments.run.spec.run_id`::

    <root>/<task>/<run_id>/spec.json     the RunSpec (RunSpec.to_dict)
                           metrics.json  {"metric": value} in natural units (F1 0.858, not 85.8)
                           env.json      {"format", "run_id", "provenance", "timings"}
                           log.jsonl     one JSON object per line, as the runner logged it

                           superseded/<run_id>.<n>/   earlier records of the same run id
                                      whose identity no longer matched (kept, never deleted)

A run is written into a hidden temporary folder beside its final place, every file is fsynced,
and the folder is renamed into place: a partially written run is never visible, and an existing
run is never overwritten (:class:`RunExistsError`) unless the caller replaces a record whose
identity no longer matches (``put(record, replace=True)``: the old folder moves to
``superseded/``, under the task's lock). Leftover ``.tmp-*`` folders from a killed process are
invisible to readers; :meth:`ResultsStore.remove_partial` deletes them.

**A damaged record** (a file missing, not UTF-8, not JSON, or JSON that is not a record) raises
:class:`CorruptRecordError` naming the file and how to train the run again (``--rerun``, or
removing its folder). A reader that needs only some runs (a table) passes them as
``records(needed=...)``: a damaged record of another run is then skipped with one stderr warning
instead of blocking every table of its task. A damaged ``env.json`` reads as a record without an
identity (:meth:`ResultsStore.identity_of`), so ``--rerun`` (and the default reuse policy, as for
any record without one) trains the run again and moves the damaged record to ``superseded/``.

**Several processes, one store** (two nox targets at once, a sweep and a table): every put and
replace holds an exclusive lock on ``<root>/<task>/.lock`` (``fcntl.flock``), so no record is
duplicated or torn; and a sweep claims each run it trains (:meth:`ResultsStore.claim`, a lock on
``<root>/<task>/.claims/<run_id>``), so a second process waits for the first to finish a run and
then reuses it instead of training it again. Locks are released by the kernel when a process
dies, so a killed process never leaves a run claimed.

**The store stays inside itself.** Its root is resolved once (a root that is a symbolic link is
the user's choice, and is followed); below it, no task folder, run folder, record file, claim or
lock may be a symbolic link, and no name may leave it (``..``). Every path the store reads,
writes, renames or deletes is checked right before it is used (``os.lstat`` of each component
below the root; files are opened with ``O_NOFOLLOW``), and a link raises
:class:`StoreEscapeError`, one line naming the path and what it points to: a record is trusted
only inside its store, and nothing is ever written through a link (no ``superseded.json`` or
claim in the folder a link points to).

Log-line conventions (those of ``experiments/run/runner.py``), used by
:mod:`experiments.report.plots`: one line per epoch with ``epoch`` (int, from 1), ``dev_<metric>``
values in natural units (e.g. ``"dev_f1": 0.71``) and ``layer_weights``: ``{"input": [s_0, …, s_L],
"output": [...]}`` with ``s = softmax(w)`` of each site's scalar mix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import hashlib
import json
import logging
import math
import os
import platform
import re
import shutil
import socket
import stat
import subprocess
import sys
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from bilm.files import NO_SPACE, out_of_space, write_text
from bilm.machine import cpu_model
from experiments.run.spec import RUN_ID_LENGTH, RunSpec, spec_matches

logger = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = Path("runs") / "store"  # relative to the working directory
STORE_FORMAT = 2  # 2: provenance.identity and provenance.code (experiments.run.identity)
FILES = ("spec.json", "metrics.json", "env.json", "log.jsonl")
KEY_PACKAGES = (
    "elmo-bench",
    "torch",
    "numpy",
    "h5py",
    "safetensors",
    "tqdm",
    "datasets",
    "spacy",
    "matplotlib",
    "ray",
)
_TASK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*")
_RUN_ID = re.compile(rf"[0-9a-f]{{{RUN_ID_LENGTH}}}")
_TMP_PREFIX = ".tmp-"
_ATTACHMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
SUPERSEDED = "superseded"  # <task>/superseded/<run_id>.<n>: replaced records, kept
SUPERSEDED_NOTE = "superseded.json"  # written into a replaced record: when, why, by what
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # opening a link fails (ELOOP); 0 where unknown


class StoreWriteError(OSError):
    """A record could not be written (e.g. a full disk); the store is as it was before."""


class RunExistsError(FileExistsError):
    """``put`` of a run_id that the store already holds (results are append-only)."""


class CorruptRecordError(ValueError):
    """A stored run's file cannot be read (truncated, not JSON, missing, or JSON that is not a
    record): the message names it and says how to train the run again.

    Attributes:
        path: the damaged file.
        folder: the run's folder (its name is the run id).
    """

    def __init__(self, path: Path, folder: Path, what: str, command: str = "") -> None:
        self.path, self.folder, self.what, self.command = path, folder, what, command
        here = f", here `{command} --rerun`" if command else ""
        super().__init__(
            f"{path}: {what}; the stored run {folder.name} is damaged: train it again by "
            f"rerunning the command that made it with --rerun{here} (all of that command's "
            f"runs train again; the damaged record is kept under {folder.parent / SUPERSEDED}/"
            f"), or remove its folder {folder} and rerun that command as it was (only this "
            "run trains)"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its parts (it may cross process boundaries: worker pools, Ray)."""
        return type(self), (self.path, self.folder, self.what, self.command)

    def made_by(self, command: str) -> CorruptRecordError:
        """The same error, the message naming ``command`` as the one that makes the run."""
        return CorruptRecordError(self.path, self.folder, self.what, command)

    @property
    def run_id(self) -> str:
        """The damaged run's id (its folder's name)."""
        return self.folder.name


class StoreEscapeError(ValueError):
    """A path below the store's root is a symbolic link, or a name that would leave the store
    (``..``, a ``/``): the store neither reads nor writes through it; the message is one line.

    Attributes:
        path: the refused path, as the store names it (below :attr:`ResultsStore.root`).
        points_to: where it leads: the link's target (resolved in brackets when relative), or,
            for a name, the path it names.
        root: the store's root, resolved.
        link: whether ``path`` is a symbolic link (else a name that leaves the store).
    """

    def __init__(self, path: Path, points_to: str, root: Path, link: bool = True) -> None:
        self.path, self.points_to, self.root, self.link = Path(path), points_to, Path(root), link
        what = (
            f"is a symbolic link to {points_to}"
            if link
            else f"is not a plain name below the store (it leads to {points_to})"
        )
        fix = "; put the folder or file itself there, not a link" if link else ""
        super().__init__(
            f"{path} {what}: the results store {root} reads and writes only inside itself, "
            f"so it is refused{fix}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its parts (it may cross process boundaries: worker pools, Ray)."""
        return type(self), (self.path, self.points_to, self.root, self.link)


class StoreUnusableError(ValueError):
    """The store's folder cannot be created or written: a file is in its place or above it, or
    there is no permission to write (:meth:`ResultsStore.check_writable`)."""


@dataclass
class Claim:
    """A run claimed for training by this process (:meth:`ResultsStore.claim`)."""

    run_id: str
    handle: Any

    def release(self) -> None:
        """Give the run up (closing the file releases its lock)."""
        if self.handle is not None:
            self.handle.close()
            self.handle = None


@dataclass(frozen=True)
class Provenance:
    """Where and with what a run was produced (``env.json``).

    Attributes:
        git_sha: commit of the repository, ``None`` outside a git checkout.
        git_dirty: whether tracked files differed from that commit.
        python: Python version.
        torch: torch version, ``None`` when not installed.
        numpy: numpy version, ``None`` when not installed.
        packages: versions of the repository's key dependencies that are installed.
        platform: ``platform.platform()``.
        hostname: the machine's name.
        device: the device that ran, e.g. ``"cpu"`` or ``"cuda:0 (NVIDIA H200)"``, with the
            precision when not fp32 (``"cuda:0 (NVIDIA H200), bf16"``).
        representation_fingerprint: hash of the representation's weights (see
            :func:`fingerprint_files`), ``None`` when not recorded.
        data_fingerprint: hash of the data files, ``None`` when not recorded.
        identity: :meth:`experiments.run.identity.RunIdentity.to_dict` of the run (what it was made
            from: data, representation, resolved configuration, device kind, precision,
            threads, result versions); empty for records older than store format 2.
        code: :meth:`experiments.run.identity.CodeVersion.to_dict` (package version, git commit,
            dirty flag, harness source hash); empty for older records.
        cpu: the CPU model and its vector units (:func:`bilm.devices.cpu_model`); ``""`` for
            older records.
    """

    git_sha: str | None
    git_dirty: bool | None
    python: str
    torch: str | None
    numpy: str | None
    packages: Mapping[str, str]
    platform: str
    hostname: str
    device: str
    representation_fingerprint: str | None = None
    data_fingerprint: str | None = None
    identity: Mapping[str, Any] = field(default_factory=dict)
    code: Mapping[str, Any] = field(default_factory=dict)
    cpu: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data; inverse of :meth:`from_dict`."""
        data = dataclasses.asdict(self)
        data["packages"] = dict(sorted(self.packages.items()))
        data["identity"] = json.loads(json.dumps(dict(self.identity), sort_keys=True))
        data["code"] = dict(self.code)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """Rebuild from :meth:`to_dict` output; unknown keys are ignored (newer writers)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class RunRecord:
    """The result of one run, as stored.

    Attributes:
        spec: what was run.
        metrics: final metrics in natural units (accuracy 0.881, not 88.1), finite numbers.
        provenance: :func:`collect_env` output of the process that ran it.
        log: the run's log lines (JSON objects), in order.
        timings: seconds and timestamps, e.g. ``{"started_unix": …, "wall_s": …}`` (``wall_s``: the
            whole run, earlier sittings of a resumed run included).
        attachments: extra text files stored beside the record, name → text (e.g. the
            predictions in the task's official format, ``predictions-dev.json``), so that
            re-scoring and significance tests never need a rerun. Not read back by
            :func:`load_record` (open ``store.path_of(run_id) / name``).
    """

    spec: RunSpec
    metrics: Mapping[str, float]
    provenance: Provenance
    log: tuple[Mapping[str, Any], ...] = ()
    timings: Mapping[str, float] = field(default_factory=dict)
    attachments: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.spec, RunSpec):
            raise TypeError(f"spec must be a RunSpec, got {type(self.spec).__name__}")
        object.__setattr__(self, "metrics", _finite_numbers("metrics", self.metrics))
        object.__setattr__(self, "timings", _finite_numbers("timings", self.timings))
        object.__setattr__(self, "log", tuple(self.log))
        for name in self.attachments:
            if name in FILES or not _ATTACHMENT.fullmatch(name):
                raise ValueError(f"attachment name {name!r} is reserved or not a plain file name")

    @property
    def run_id(self) -> str:
        """The run_id of :attr:`spec`."""
        return self.spec.run_id


class ResultsStore:
    """Append-only folder of :class:`RunRecord` (layout in the module docstring).

    Everything the store reads, writes, renames or deletes stays below :attr:`real_root`: a
    task folder, run folder, record file, claim or lock that is a symbolic link, or a name that
    leaves the store (``..``), raises :class:`StoreEscapeError` before it is used.

    Args:
        root: the store's folder; created on the first :meth:`put`. It may itself be a symbolic
            link (the user chose it): it is resolved once, here.

    Attributes:
        root: the folder as given; the paths the store returns and names are below it.
        real_root: ``root`` resolved (absolute, without symbolic links) when the store was
            opened: the folder every path is confined to.
    """

    def __init__(self, root: str | os.PathLike[str] = DEFAULT_ROOT) -> None:
        self.root = Path(root)
        self.real_root = Path(os.path.realpath(self.root))
        self._warned: set[Path] = set()  # damaged (or refused) files already warned about

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.root)!r})"

    # ------------------------------------------------------------------------ confinement
    def _inside(self, *names: str) -> Path:
        """``<real_root>/<names…>``, checked right before it is used: each name is one plain
        name (not ``..``), and no component of it that exists is a symbolic link.

        Args:
            *names: the path's components below the root (e.g. task, run id, file name).

        Returns:
            The real path to act on (below :attr:`real_root`).

        Raises:
            StoreEscapeError: a name leaves the store, or a component is a symbolic link.
        """
        for name in names:
            if name in ("", ".", "..") or any(s and s in name for s in (os.sep, os.altsep)):
                raise StoreEscapeError(
                    self.root.joinpath(*names),
                    os.path.normpath(self.real_root.joinpath(*names)),
                    self.real_root,
                    link=False,
                )
        path = self.real_root
        for name in names:
            path = path / name
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                break  # nothing below exists (yet): what is made there is made by the store
            if stat.S_ISLNK(mode):
                raise self._escape(path)
        return self.real_root.joinpath(*names)

    def _escape(self, link: Path) -> StoreEscapeError:
        """The error refusing ``link`` (a real path below :attr:`real_root`)."""
        try:
            target = os.readlink(link)
        except OSError:  # replaced meanwhile: say where it leads now
            target = os.path.realpath(link)
        if not os.path.isabs(target):
            target = f"{target} ({os.path.realpath(link)})"
        return StoreEscapeError(self._shown(link), target, self.real_root)

    def _shown(self, real: Path) -> Path:
        """How the store names a real path below :attr:`real_root` (below :attr:`root`)."""
        return self.root / real.relative_to(self.real_root)

    def _folder(self, *names: str) -> Path:
        """``<names…>`` made (with the root) when missing, checked before and after (``mkdir``
        accepts a link to a folder that exists); returns its real path."""
        self._inside(*names).mkdir(parents=True, exist_ok=True)
        return self._inside(*names)

    def _lock(self, *names: str, blocking: bool) -> Any:
        """:func:`lock_file` on ``<names…>`` (its folder exists), never through a link."""
        path = self._inside(*names)
        try:
            return lock_file(path, blocking=blocking)
        except OSError as error:
            if error.errno == errno.ELOOP:  # a link put there since the check
                raise self._escape(path) from None
            raise

    def _read(self, *names: str) -> bytes:
        """The bytes of the file ``<names…>``, opened without following a link.

        Raises:
            FileNotFoundError: it does not exist.
            StoreEscapeError: it, or a folder above it below the root, is a symbolic link.
        """
        path = self._inside(*names)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise self._escape(path) from None
            raise
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    # ------------------------------------------------------------------------ writing
    def check_writable(self) -> None:
        """Check, creating nothing, that :meth:`put` can create the store's folder and write in
        it: the commands that train call this before the first run.

        Raises:
            StoreUnusableError: naming the path: the store, or a folder above it, is a file, or
                the nearest existing folder is not writable.
        """
        existing = self.root
        while not existing.exists() and not existing.is_symlink() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir():
            where = "" if existing == self.root else f" is under {existing}, which"
            raise StoreUnusableError(f"{self.root}{where} is a file, not a folder")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise StoreUnusableError(
                f"{self.root} cannot be written: no permission to write in {existing}"
            )

    def put(self, record: RunRecord, replace: bool = False, reason: str = "") -> Path:
        """Write ``record`` atomically and return its folder.

        Args:
            record: the run.
            replace: when the store already holds this run id, move that record to
                ``<task>/superseded/<run_id>.<n>/`` (with a ``superseded.json`` saying when,
                why and by which record) and put this one in its place. Only for a record whose
                identity no longer matches (``experiments.run.identity.reuse_differences``) or a
                rerun the user forced.
            reason: why the old record is replaced (stored in its ``superseded.json``).

        Raises:
            RunExistsError: the store already holds this run_id and ``replace`` is false (also
                when a concurrent writer finished first); nothing is changed.
            StoreWriteError: the disk refused a write (full, read-only, quota); the partial
                copy is removed and the store is unchanged, as the message says.
            StoreEscapeError: the task folder, the run's folder, the task's lock or a file of
                the record it replaces is a symbolic link; nothing is written through it.
        """
        rid = record.run_id
        task = _task_name(record.spec.task)
        shown = self.root / task / rid
        files = _serialise(record)  # before touching the disk: bad data writes nothing
        try:
            task_dir = self._folder(task)
        except OSError as error:
            raise _write_error(error, rid, shown) from error
        with self._locked(task):
            final = self._inside(task, rid)
            if final.exists() and not replace:
                raise RunExistsError(f"run {rid} is already stored at {shown}")
            tmp = self._inside(task, f"{_TMP_PREFIX}{rid}-{uuid.uuid4().hex}")
            try:
                tmp.mkdir()
                for name, text in files.items():
                    write_text(tmp / name, text)
                _fsync_dir(tmp)
                if replace and final.exists():
                    self._supersede(task, rid, record, reason)
                final = self._inside(task, rid)  # checked right before the rename
                os.rename(tmp, final)  # atomic; fails when a non-empty `final` exists
                _fsync_dir(task_dir)
            except OSError as error:
                shutil.rmtree(tmp, ignore_errors=True)
                if error.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    raise RunExistsError(f"run {rid} is already stored at {shown}") from error
                raise _write_error(error, rid, shown) from error
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return shown

    def _supersede(self, task: str, rid: str, by: RunRecord, reason: str) -> Path:
        """Move the stored record ``<task>/<rid>`` to ``superseded/<rid>.<n>`` with a note
        (lock held); every path is checked right before it is written or renamed."""
        import time

        old = self._folder(task, SUPERSEDED)
        n = 1 + max(
            (int(p.suffix[1:]) for p in old.glob(f"{rid}.*") if p.suffix[1:].isdigit()),
            default=0,
        )
        note = {
            "superseded_unix": time.time(),
            "reason": reason or "replaced",
            "by_identity": dict(by.provenance.identity),
            "by_code": dict(by.provenance.code),
        }
        path = self._inside(task, rid, SUPERSEDED_NOTE)
        write_text(path, json.dumps(note, indent=2, sort_keys=True) + "\n")
        target = self._inside(task, SUPERSEDED, f"{rid}.{n}")
        os.rename(self._inside(task, rid), target)
        return self._shown(target)

    @contextlib.contextmanager
    def _locked(self, task: str) -> Iterator[None]:
        """An exclusive lock on ``<root>/<task>/.lock`` for the block (all writers of a task)."""
        handle = self._lock(task, ".lock", blocking=True)
        try:
            yield
        finally:
            handle.close()

    def claim(self, spec: RunSpec, wait: bool = True) -> Claim | None:
        """Claim ``spec``'s run for training in this process: an exclusive lock on
        ``<root>/<task>/.claims/<run_id>`` held until :meth:`Claim.release` (or the process
        ends). With ``wait`` false, ``None`` when another process holds it; with ``wait``,
        block until it is free (the other process has stored or abandoned the run).

        Raises:
            StoreEscapeError: the task folder, ``.claims`` or the claim is a symbolic link.
        """
        task = _task_name(spec.task)
        self._folder(task, ".claims")
        handle = self._lock(task, ".claims", spec.run_id, blocking=wait)
        return None if handle is None else Claim(spec.run_id, handle)

    # ------------------------------------------------------------------------ reading
    def superseded(self, run_id: str) -> list[Path]:
        """Folders of earlier records of ``run_id`` that were replaced, oldest first."""
        found = []
        if _RUN_ID.fullmatch(run_id) and self.real_root.is_dir():
            for task_dir in self._task_dirs():
                folder = self._inside(task_dir.name, SUPERSEDED)
                if folder.is_dir():
                    found += [
                        self._shown(self._inside(task_dir.name, SUPERSEDED, p.name))
                        for p in folder.glob(f"{run_id}.*")
                        if p.suffix[1:].isdigit()
                    ]
        return sorted(found, key=lambda p: int(p.suffix[1:]))

    def identity_of(self, run_id: str) -> dict[str, Any] | None:
        """The stored run's ``provenance.identity`` (``{}`` for an older record;
        ``{"damaged": why}`` (:data:`experiments.run.identity.DAMAGED`) for one whose
        ``env.json`` is damaged: warned about on stderr; it then matches nothing, so ``--rerun``
        or a changed-identity rerun replaces it, the reason saying it is damaged), or ``None``
        when the run is not stored.

        Raises:
            StoreEscapeError: the run's folder or its ``env.json`` is a symbolic link (a
                record is trusted only inside its store: it is neither read nor replaced).
        """
        real = self._find(run_id)
        if real is None:
            return None
        folder, task = self._shown(real), real.parent.name
        try:
            env = _read_json(
                folder / "env.json", folder, lambda: self._read(task, run_id, "env.json")
            )
            provenance = env.get("provenance", {}) if isinstance(env, dict) else None
            if not isinstance(provenance, dict):
                raise _damaged(folder / "env.json", folder, "not a run's environment")
        except CorruptRecordError as error:
            self._warn(error, " (its identity cannot be read: the run counts as changed)")
            return {"damaged": error.what}
        identity: dict[str, Any] = provenance.get("identity") or {}
        return identity

    def _warn(self, error: CorruptRecordError | StoreEscapeError, note: str = "") -> None:
        """One stderr line per damaged (or refused) file and store (``warning: …``)."""
        if error.path in self._warned:
            return
        self._warned.add(error.path)
        print(f"warning: {error}{note}", file=sys.stderr, flush=True)

    def has(self, run_id: str) -> bool:
        """Whether a finished run with this id is stored.

        Raises:
            StoreEscapeError: a task folder, or the run's folder, is a symbolic link.
        """
        return self._find(run_id) is not None

    def path_of(self, run_id: str) -> Path | None:
        """The folder of a stored run (below :attr:`root`), or ``None``.

        Raises:
            StoreEscapeError: a task folder, or the run's folder, is a symbolic link.
        """
        real = self._find(run_id)
        return None if real is None else self._shown(real)

    def _find(self, run_id: str) -> Path | None:
        """The real folder of a stored run, or ``None`` (:meth:`path_of`)."""
        if not _RUN_ID.fullmatch(run_id) or not self.real_root.is_dir():
            return None
        for task_dir in self._task_dirs():
            path = self._inside(task_dir.name, run_id)
            if path.is_dir():
                return path
        return None

    def get(self, run_id: str) -> RunRecord:
        """Load one run.

        Raises:
            KeyError: no such run.
            CorruptRecordError: the record is damaged.
            StoreEscapeError: its folder or one of its files is a symbolic link.
        """
        real = self._find(run_id)
        if real is None:
            raise KeyError(f"run {run_id!r} is not in {self.root}")
        return self._load(real)

    def _load(self, real: Path) -> RunRecord:
        """:func:`load_record` of the run folder ``real`` (below :attr:`real_root`), reading
        each file without following a link."""
        task, rid = real.parent.name, real.name
        self._inside(task, rid)
        return _load_record(self._shown(real), lambda name: self._read(task, rid, name))

    def run_ids(self, task: str | None = None) -> list[str]:
        """Stored run_ids (sorted by task, then id) without loading them.

        Raises:
            StoreEscapeError: a task folder or a run folder is a symbolic link.
        """
        return [self._inside(path.parent.name, path.name).name for path in self._run_dirs(task)]

    def records(
        self,
        task: str | None = None,
        *,
        needed: Collection[str] | None = None,
        damaged: list[CorruptRecordError] | None = None,
        **filters: Any,
    ) -> list[RunRecord]:
        """Stored runs of ``task`` (all tasks when ``None``) whose spec matches ``filters``.

        Filters are spec fields or mix fields (``lam``, ``mode``, ``layer_norm``), compared for
        equality, e.g. ``store.records("snli", representation="elmo", lam=0.001)``.

        Args:
            task: the task's runs only (``None``: every task's).
            needed: the run ids the caller cannot do without (e.g. a table's expected runs).
                When given, a damaged record of any other run (or one that is a symbolic link)
                is skipped with one stderr line (``warning: …``, naming the file and the fix);
                ``None``: every run is needed.
            damaged: where given, the errors of the damaged records skipped are appended.
            **filters: spec or mix fields and their values.

        Raises:
            CorruptRecordError: a needed record is damaged (its message names the file and
                says how to train the run again).
            StoreEscapeError: a needed record's folder or file, or a task folder, is a
                symbolic link.
        """
        found = []
        for path in self._run_dirs(task):
            try:
                record = self._load(path)
            except (CorruptRecordError, StoreEscapeError) as error:
                if needed is None or path.name in needed:
                    raise
                self._warn(error, " (skipped: not needed here)")
                if damaged is not None and isinstance(error, CorruptRecordError):
                    damaged.append(error)
                continue
            if spec_matches(record.spec, filters):
                found.append(record)
        return found

    def partial(self) -> list[Path]:
        """Temporary folders left behind by writers that died mid-``put``.

        Raises:
            StoreEscapeError: one of them (or a task folder) is a symbolic link.
        """
        return [self._shown(path) for path in self._partial()]

    def remove_partial(self) -> list[Path]:
        """Delete :meth:`partial` folders (only when no writer is running) and return them;
        each is checked right before it is deleted, so nothing is deleted through a link."""
        paths = self._partial()
        for path in paths:
            shutil.rmtree(self._inside(path.parent.name, path.name), ignore_errors=True)
        return [self._shown(path) for path in paths]

    def _partial(self) -> list[Path]:
        if not self.real_root.is_dir():
            return []
        return sorted(
            self._inside(d.name, p.name)
            for d in self._task_dirs()
            for p in d.glob(f"{_TMP_PREFIX}*")
        )

    def _task_dirs(self) -> Iterator[Path]:
        """The real task folders; a link to a folder at the root raises
        :class:`StoreEscapeError` (a link to anything else is no task: skipped)."""
        for path in sorted(self.real_root.iterdir()):
            if path.name.startswith("."):
                continue
            if path.is_symlink():
                if path.is_dir():
                    raise self._escape(path)
            elif path.is_dir():
                yield path

    def _run_dirs(self, task: str | None) -> Iterator[Path]:
        """The real run folders of ``task`` (every task's when ``None``), links included (the
        caller refuses them)."""
        if not self.real_root.is_dir():
            return
        task_dirs = [self._inside(task)] if task is not None else list(self._task_dirs())
        for task_dir in task_dirs:
            if not task_dir.is_dir():
                continue
            for path in sorted(task_dir.iterdir()):
                if _RUN_ID.fullmatch(path.name) and (path.is_symlink() or path.is_dir()):
                    yield path


def _task_name(task: str) -> str:
    """``task`` when it is a plain folder name (no ``..``, no ``/``), else ``ValueError``."""
    if not _TASK_NAME.fullmatch(task):
        raise ValueError(f"task name {task!r} is not a valid folder name")
    return task


def _damaged(path: Path, folder: Path, what: str) -> CorruptRecordError:
    return CorruptRecordError(path, folder, what)


def _read_text(path: Path, folder: Path, read: Callable[[], bytes] | None = None) -> str:
    """The UTF-8 text of one file of a run folder (:class:`CorruptRecordError` if unreadable),
    line endings translated as ``Path.read_text`` does.

    Args:
        path: the file (named in errors).
        folder: its run folder.
        read: how to read its bytes (the store's reader, which refuses links); ``None``:
            ``path.read_bytes``.
    """
    try:
        text = (path.read_bytes() if read is None else read()).decode("utf-8")
    except FileNotFoundError:
        raise _damaged(path, folder, "missing") from None
    except UnicodeDecodeError as error:
        raise _damaged(path, folder, f"not UTF-8 ({error.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _parse_json(text: str, path: Path, folder: Path, line: int | None = None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {line if line is not None else error.lineno}, column {error.colno}"
        raise _damaged(path, folder, f"not valid JSON ({error.msg}: {where})") from None


def _read_json(path: Path, folder: Path, read: Callable[[], bytes] | None = None) -> Any:
    """One JSON file of a run folder (:class:`CorruptRecordError` if missing or malformed);
    ``read`` as for :func:`_read_text`."""
    return _parse_json(_read_text(path, folder, read), path, folder)


def _built(path: Path, folder: Path, what: str, build: Callable[[], Any]) -> Any:
    """``build()``, where a file's JSON that is not what it should be (a missing key, a wrong
    type) raises :class:`CorruptRecordError` naming ``path`` (``what``: e.g. ``"a run spec"``)."""
    try:
        return build()
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        reason = " ".join(str(error.args[0] if error.args else error).split())
        raise _damaged(path, folder, f"not {what} ({type(error).__name__}: {reason})") from None


def load_record(path: str | os.PathLike[str]) -> RunRecord:
    """Read one run folder written by :meth:`ResultsStore.put`.

    Raises:
        CorruptRecordError: one of its files is missing, not UTF-8 or not valid JSON (e.g.
            truncated), or holds JSON that is not a record's (a spec that does not build, a
            metric that is not a number); the message names the file and how to retrain.
    """
    return _load_record(Path(path), None)


def _load_record(folder: Path, read: Callable[[str], bytes] | None) -> RunRecord:
    """:func:`load_record` of ``folder``, each file's bytes read by ``read(name)`` when given
    (the store's reader, which refuses links), else from ``folder``."""

    def reader(name: str) -> Callable[[], bytes] | None:
        return None if read is None else functools.partial(read, name)

    spec_path, metrics_path, env_path, log_path = (folder / name for name in FILES)
    spec_data, metrics, env = (
        _read_json(p, folder, reader(p.name)) for p in (spec_path, metrics_path, env_path)
    )
    spec = _built(spec_path, folder, "a run spec", lambda: RunSpec.from_dict(spec_data))
    metrics = _built(
        metrics_path, folder, "a run's metrics", lambda: _finite_numbers("metrics", metrics)
    )
    provenance, timings = _built(
        env_path,
        folder,
        "a run's environment",
        lambda: (
            Provenance.from_dict(env["provenance"]),
            _finite_numbers("timings", env.get("timings", {})),
        ),
    )
    lines = _read_text(log_path, folder, reader(log_path.name)).splitlines()
    log = tuple(
        _parse_json(line, log_path, folder, number)
        for number, line in enumerate(lines, start=1)
        if line.strip()
    )
    if not all(isinstance(line, dict) for line in log):
        raise _damaged(log_path, folder, "not a run's log (a line is not a JSON object)")
    record = RunRecord(spec=spec, metrics=metrics, provenance=provenance, log=log, timings=timings)
    if record.run_id != folder.name:
        logger.warning(
            "run folder %s holds a spec whose run_id is now %s (RunSpec or hash changed?)",
            folder,
            record.run_id,
        )
    return record


def collect_env(
    device: str | None = None,
    representation_fingerprint: str | None = None,
    data_fingerprint: str | None = None,
    repo: str | os.PathLike[str] = REPO_ROOT,
    git: tuple[str | None, bool | None] | None = None,
) -> Provenance:
    """Describe the current process for :class:`RunRecord.provenance`.

    Imports nothing heavy: versions come from package metadata, and the device is read from
    torch only when torch is already imported (pass ``device`` to be explicit).

    Args:
        device: the device the run used; detected when ``None``.
        representation_fingerprint: e.g. ``fingerprint_files(weights_path)``.
        data_fingerprint: e.g. ``fingerprint_files(data_dir)``.
        repo: the git checkout whose commit is recorded.
        git: its commit and dirty flag as already read (say, when the run started); read from
            ``repo`` now when ``None``.
    """
    packages = {}
    for name in KEY_PACKAGES:
        version = _version(name)
        if version is not None:
            packages[name] = version
    sha, dirty = git if git is not None else git_state(Path(repo))
    return Provenance(
        git_sha=sha,
        git_dirty=dirty,
        python=platform.python_version(),
        torch=_version("torch"),
        numpy=_version("numpy"),
        packages=packages,
        platform=platform.platform(),
        hostname=socket.gethostname(),
        device=device if device is not None else _detect_device(),
        representation_fingerprint=representation_fingerprint,
        data_fingerprint=data_fingerprint,
        cpu=cpu_model(),
    )


def fingerprint_files(*paths: str | os.PathLike[str]) -> str:
    """A 32-hex-digit blake2b over the names and contents of files (folders: all files below).

    Names are taken relative to each given path, so moving a folder keeps its fingerprint.
    """
    digest = hashlib.blake2b(digest_size=16)
    for given in map(Path, paths):
        files = sorted(p for p in given.rglob("*") if p.is_file()) if given.is_dir() else [given]
        for file in files:
            name = file.relative_to(given).as_posix() if given.is_dir() else file.name
            digest.update(f"{name}\0{file.stat().st_size}\0".encode())
            with file.open("rb") as handle:
                for chunk in iter(functools.partial(handle.read, 1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def _serialise(record: RunRecord) -> dict[str, str]:
    def dump(data: object) -> str:
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False)

    try:
        lines = [
            json.dumps(dict(line), sort_keys=True, ensure_ascii=False, allow_nan=False)
            for line in record.log
        ]
    except (TypeError, ValueError) as error:
        raise ValueError(f"log lines must be JSON objects: {error}") from error
    env = {
        "format": STORE_FORMAT,
        "run_id": record.run_id,
        "provenance": record.provenance.to_dict(),
        "timings": dict(record.timings),
    }
    return {
        "spec.json": dump(record.spec.to_dict()) + "\n",
        "metrics.json": dump(dict(record.metrics)) + "\n",
        "env.json": dump(env) + "\n",
        "log.jsonl": "".join(line + "\n" for line in lines),
        **record.attachments,
    }


def lock_file(path: Path, blocking: bool) -> Any:
    """An open file holding an exclusive ``flock`` on ``path`` (created if needed); ``None``
    when not ``blocking`` and another process holds it. Without ``fcntl`` (Windows) the file is
    opened unlocked: one writer per store there.

    A lock file is never followed when it is a symbolic link: the open fails with ``ELOOP``
    (``O_NOFOLLOW``), so no lock is taken on, or file created in, the place a link points to.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | _NOFOLLOW, 0o666)
    handle = os.fdopen(fd, "a+")
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _write_error(error: OSError, rid: str, final: Path) -> StoreWriteError:
    reason = NO_SPACE if out_of_space(error) is not None else f"{type(error).__name__}: {error}"
    return StoreWriteError(
        error.errno,
        f"could not write run {rid} to {final}: {reason}; the store is unchanged "
        "(the partial copy was removed); free space and rerun: finished runs are kept",
    )


def _fsync_dir(path: Path) -> None:
    if sys.platform == "win32":  # directories cannot be opened for fsync there
        return
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _finite_numbers(name: str, values: Mapping[str, Any]) -> dict[str, float]:
    result = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be strings, got {key!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{name}[{key!r}] must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name}[{key!r}] must be finite, got {value}")
        result[key] = float(value)
    return result


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def git_state(repo: Path) -> tuple[str | None, bool | None]:
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    sha = git("rev-parse", "HEAD")
    if not sha:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return sha, (bool(status) if status is not None else None)


def _detect_device() -> str:
    """Where torch would compute by default in this process: only ``"cpu"`` is certain.

    A run that used CUDA passes its device explicitly; merely having CUDA visible says nothing
    about where a run ran, so it is not reported.
    """
    return "cpu"
