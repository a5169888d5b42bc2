"""Frozen-representation feature cache: compute every token's layers once per dataset.

A frozen biLM makes caching exact (docs/representations.md, "Caching frozen features"; e2e-coref
``cache_elmo.py``, ``allennlp elmo``): each run then only learns the scalar mixes and the task
model. Each cache *entry* is a folder under a cache root::

    <root>/<name>-<repr fp[:16]>-<data fp[:16]>-<dtype>/
        offsets.npy      (num_sequences + 1,) int64    sequence i: tokens offsets[i]:offsets[i+1]
        full form:
          layers.npy     (total_tokens, num_layers, dim)         float16 or float32
        reduced form (representations declaring ``context_free_layers = k > 0``):
          context.npy    (total_tokens, num_layers - k, dim)     layers k.. per token
          words.npy      (num_rows, k, dim)                      layers ..k once per distinct word
          token_rows.npy (total_tokens,) int32                   token -> its row of words.npy
        meta.json        fingerprints, shapes, dtype, form, per-file SHA-256s   written last
        used             empty; its mtime is the entry's last use (LRU); flock'ed while open

keyed by :meth:`Representation.fingerprint` and a SHA-256 of the token sequences, so a change in
either builds a new entry. The form is a storage detail, not part of the key: both forms give
bit-identical lookups.

**Reduced form.** A representation declares ``context_free_layers: int`` (a protocol attribute;
0 claims nothing): its first ``k`` layers depend only on the token's own string, never on its
neighbours (ELMo's layer 0 is the char-CNN of the word). Those layers are stored once per distinct
word (``words.npy``) and referenced per token by a 4-byte row index, instead of ``k × dim``
values per token. It stays exact even where a word's vector is not bit-stable across batches (a
BLAS kernel chosen by batch shape): each token's stored value is compared bit for bit with its
word's row, and a differing value gets a row of its own. Nothing is inferred from names.

**Budget and eviction.** Before writing an entry, the least-recently used whole entries of the
root are evicted until the root's entries plus the new one fit the budget (:func:`parse_budget`;
default :data:`DEFAULT_BUDGET`, half of the space available to the cache) and the disk. An entry
open in any process (a shared ``flock`` on its ``used`` file) is never evicted. Evictions are
reported on stderr. An entry larger than the budget, or than the disk allows, is refused before
anything is changed (:class:`CacheSpaceError`).

**Crash, full disk, corruption.** An entry is written to a temporary sibling folder (``.tmp-*``,
ignored) with ordinary ``pwrite`` calls (never memory-mapped writes, which die of ``SIGBUS`` on a
full disk), its space reserved up front with ``posix_fallocate``, fsynced, checksummed, and renamed
in one step. A crash or a full disk mid-build leaves no visible entry and the other entries as
they were (a full disk raises :class:`CacheSpaceError`, an :class:`OSError` with ``ENOSPC``, saying
so). Every open verifies each file's size and chunked SHA-256 (in parallel threads) before
anything is read; a corrupted or truncated entry raises :class:`CorruptCacheError` when opened
directly, and :meth:`FeatureCache.build` reports it on stderr, removes it and rebuilds it.

Sequences are run longest first to limit padding; that is exact only when a sentence's vectors do
not depend on its batch, so representations with ``state_policy == "carry"`` (and trainable ones)
are refused.

**Precision.** ``build(..., precision="bf16")`` runs a biLM representation (one with a
:class:`bilm.BiLM` as ``.bilm``) with :meth:`bilm.BiLM.to_precision` ``"bf16"`` while the entry
is built (its previous precision restored after) and keys the entry by the representation's
fingerprint mixed with the precision, so bf16 and float32 entries never mix; ``"fp32"`` (the
default) keys and builds exactly as before.
"""

from __future__ import annotations

import concurrent.futures
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bilm.bilm import BiLM
from bilm.devices import exact_fp32
from bilm.files import write_json
from tasks.common.progress import progress_bar
from tasks.representations import Layers, Representation

try:  # POSIX advisory locks: an entry open in any process is never evicted
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

FORMAT = "elmo-bench-feature-cache/2"
DEFAULT_BUDGET = "50%"
CHUNK_BYTES = 64 << 20  # one SHA-256 per 64 MiB of a file: verified by parallel threads
_DTYPES = {"float16": np.float16, "float32": np.float32}
_USED = "used"
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


class CacheError(ValueError):
    """A representation cannot be cached, or a cache folder is unreadable."""


class CorruptCacheError(CacheError):
    """A cache entry failed its size or checksum verification (nothing of it was read)."""


class CacheSpaceError(OSError):
    """An entry does not fit the budget or the disk; the cache root is left as it was.

    ``errno`` is ``ENOSPC`` for a full disk (also for a budget too small for the entry).
    """


# ----------------------------------------------------------------------------- fingerprints
def data_fingerprint(sequences: Sequence[Sequence[str]]) -> str:
    """SHA-256 of the token sequences (order, boundaries and exact strings)."""
    h = hashlib.sha256()
    for sequence in sequences:
        if isinstance(sequence, str):
            raise TypeError("sequences must be token lists, got a string")
        h.update(json.dumps(list(sequence)).encode("ascii"))  # escapes odd Unicode
        h.update(b"\n")
    return h.hexdigest()


def _dtype_name(dtype: str | torch.dtype | type) -> str:
    name = str(dtype).removeprefix("torch.")
    if name in ("half", "<class 'numpy.float16'>"):
        name = "float16"
    if name in ("float", "<class 'numpy.float32'>"):
        name = "float32"
    if name not in _DTYPES:
        raise ValueError(f"dtype must be float16 or float32, got {dtype!r}")
    return name


#: Inference precisions an entry can be built with (:meth:`bilm.BiLM.to_precision`).
BUILD_PRECISIONS: tuple[str, ...] = ("fp32", "bf16")


def _keyed_fingerprint(rep_fp: str, precision: str) -> str:
    """The fingerprint an entry is keyed by: the representation's for fp32, else mixed with the
    precision (a bf16 entry never answers for a float32 one)."""
    if precision == "fp32":
        return rep_fp
    return hashlib.sha256(f"{rep_fp}/precision={precision}".encode("ascii")).hexdigest()


def _check_precision(representation: Representation, precision: str) -> None:
    if precision not in BUILD_PRECISIONS:
        raise ValueError(f"precision must be one of {BUILD_PRECISIONS}, got {precision!r}")
    if precision != "fp32" and not isinstance(getattr(representation, "bilm", None), BiLM):
        raise CacheError(
            f"cannot build {representation.name!r} in {precision}: only biLM representations "
            "(elmo, bilm-random) have a precision; use precision='fp32'"
        )


@contextmanager
def _running_in(representation: Representation, precision: str) -> Iterator[None]:
    """The representation's biLM in ``precision`` inside (restored after); fp32: untouched."""
    model = getattr(representation, "bilm", None)
    if precision == "fp32" or not isinstance(model, BiLM) or model.precision == precision:
        yield
        return
    previous = model.precision
    model.to_precision(precision)  # type: ignore[arg-type]
    try:
        yield
    finally:
        model.to_precision(previous)


def check_cacheable(representation: Representation) -> None:
    """Raise :class:`CacheError` when the representation's vectors may change between calls."""
    if representation.state_policy == "carry":
        raise CacheError(
            f"cannot cache {representation.name!r}: its LSTM state policy is 'carry', so vectors "
            "depend on earlier batches and on batch order; build it with state='reset' (or 'warm')"
        )
    if representation.trainable:
        raise CacheError(f"cannot cache {representation.name!r}: it is trainable (fine-tuned)")
    if representation.num_layers == 0 or representation.output_dim == 0:
        raise CacheError(f"nothing to cache: {representation.name!r} has no layers")


def context_free_layers(representation: Representation) -> int:
    """The representation's declared ``context_free_layers``, checked.

    Raises:
        CacheError: the declaration is not an integer in ``0..num_layers``.
    """
    k = representation.context_free_layers
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= representation.num_layers:
        raise CacheError(
            f"{representation.name!r}: context_free_layers must be an int in "
            f"0..{representation.num_layers}, got {k!r}"
        )
    return k


# ----------------------------------------------------------------------------------- budget
def parse_budget(text: str | int | float | None) -> int | float | None:
    """Parse a cache budget.

    Accepted forms: a byte count with an optional unit, decimal (``B``, ``KB``, ``MB``, ``GB``,
    ``TB``) or binary (``KiB``, ``MiB``, ``GiB``, ``TiB``), case-insensitive: ``"20GB"``,
    ``"500 MB"``, ``"1.5TiB"``, ``"1000000"``; a percentage of the space available to the cache
    (its free disk plus what its entries already hold): ``"50%"``; ``"unlimited"`` (or
    ``"none"``). An ``int`` is a byte count. ``None`` means :data:`DEFAULT_BUDGET`.

    Returns:
        Bytes (``int``), a fraction in ``(0, 1]`` (``float``, from a percentage), or ``None`` for
        no limit.

    Raises:
        ValueError: not one of the forms above, negative, or a percentage outside ``(0, 100]``.
    """
    if text is None:
        text = DEFAULT_BUDGET
    if isinstance(text, bool):
        raise ValueError(f"cache budget must be a size, a percentage or 'unlimited', got {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"cache budget must be >= 0 bytes, got {text}")
        return text
    if isinstance(text, float):
        raise ValueError(f"cache budget {text!r}: give a size with a unit or a percentage")
    value = text.strip().lower()
    if value in ("unlimited", "none"):
        return None
    if value.endswith("%"):
        try:
            percent = float(value[:-1])
        except ValueError:
            raise ValueError(f"cache budget {text!r}: bad percentage") from None
        if not 0 < percent <= 100:
            raise ValueError(f"cache budget {text!r}: percentage must lie in (0, 100]")
        return percent / 100
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-z]*)", value)
    if match is None or match.group(2) not in _UNITS:
        raise ValueError(
            f"cache budget {text!r}: expected e.g. '20GB', '500MB', '1.5TiB', '50%' or 'unlimited'"
        )
    number, unit = match.groups()
    if unit == "" and "." in number:
        raise ValueError(f"cache budget {text!r}: a fractional byte count needs a unit")
    return int(float(number) * _UNITS[unit])


def resolve_budget(budget: str | int | None, root: str | Path) -> int | None:
    """The budget in bytes for the cache at ``root`` (``None``: no limit); see :func:`parse_budget`.

    A percentage is taken of the space available to the cache now: free disk at ``root`` (or its
    nearest existing parent) plus the bytes its entries hold.
    """
    parsed = parse_budget(budget)
    if not isinstance(parsed, float):
        return parsed
    root = Path(root)
    held = sum(size for _, size, _ in _entries(root)) if root.is_dir() else 0
    return int(parsed * (_free_bytes(root) + held))


def _free_bytes(path: Path) -> int:
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def _entries(root: Path) -> list[tuple[float, int, Path]]:
    """Complete entries under ``root`` as ``(last use, bytes, folder)``."""
    found = []
    for folder in root.iterdir():
        if folder.name.startswith(".") or not (folder / "meta.json").is_file():
            continue
        try:
            size = _folder_bytes(folder)
            try:
                used = (folder / _USED).stat().st_mtime
            except FileNotFoundError:
                used = (folder / "meta.json").stat().st_mtime
        except OSError:  # removed meanwhile by another process
            continue
        found.append((used, size, folder))
    return found


def _human(size: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(size) < 1000:
            return f"{size:.1f} {unit}" if unit != "B" else f"{int(size)} B"
        size /= 1000
    return f"{size:.1f} TB"


def _say(message: str) -> None:
    print(f"feature cache: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ locks
def _try_lock(path: Path, exclusive: bool) -> int | None:
    """An fd holding a non-blocking flock on ``path``; ``None`` when it is held elsewhere."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    if fcntl is None:  # pragma: no cover - not POSIX
        return fd
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _shared_lock(path: Path) -> int | None:
    """A blocking shared flock on ``path`` (waits for an eviction in progress to finish)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def _remove(folder: Path) -> None:
    """Remove a folder so that it disappears in one step (renamed aside, then deleted)."""
    aside = folder.with_name(f".tmp-removed-{folder.name}-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(folder, aside)
    except OSError:
        aside = folder
    shutil.rmtree(aside, ignore_errors=True)


def _make_room(root: Path, needed: int, budget: int | None, name: str) -> None:
    """Evict least-recently used unlocked entries until ``needed`` bytes fit budget and disk.

    Raises:
        CacheSpaceError: it cannot fit even after evicting every evictable entry; nothing was
            evicted.
    """
    if budget is not None and needed > budget:
        raise CacheSpaceError(
            errno.ENOSPC,
            f"feature cache entry {name} needs about {_human(needed)}, more than the cache "
            f"budget of {_human(budget)} ({root}); nothing was changed: raise the budget "
            "(--cache-budget) or run without the cache",
        )
    entries = sorted(_entries(root), key=lambda e: (e[0], e[2].name))  # least recent first
    held = sum(size for _, size, _ in entries)
    free = _free_bytes(root)
    victims: list[tuple[float, int, Path, int]] = []

    def fits() -> bool:
        freed = sum(v[1] for v in victims)
        within_budget = budget is None or held - freed + needed <= budget
        return within_budget and needed <= free + freed

    try:
        for used, size, folder in entries:
            if fits():
                break
            fd = _try_lock(folder / _USED, exclusive=True)
            if fd is not None:  # not open anywhere, this process included
                victims.append((used, size, folder, fd))
        if not fits():
            freed = sum(v[1] for v in victims)
            raise CacheSpaceError(
                errno.ENOSPC,
                f"feature cache entry {name} needs about {_human(needed)}: the disk has "
                f"{_human(free)} free, the cache holds {_human(held)} (of which "
                f"{_human(freed)} evictable), budget "
                f"{'unlimited' if budget is None else _human(budget)}; nothing was changed",
            )
        for used, size, folder, _ in victims:
            _remove(folder)
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(used))
            _say(
                f"evicted {folder.name} ({_human(size)}, last used {when}) to fit {name} "
                f"({_human(needed)}) within {'the disk' if budget is None else _human(budget)}"
            )
    finally:
        for *_, fd in victims:
            os.close(fd)


# ---------------------------------------------------------------------------- file writing
class _NpyWriter:
    """An ``.npy`` file written with ``pwrite`` at row offsets (any order), space reserved first.

    Args:
        path: the file to create.
        dtype: element type.
        shape: array shape; rows are along the first axis.

    Raises:
        OSError: ``ENOSPC`` when the disk cannot hold the file (from ``posix_fallocate``).
    """

    def __init__(self, path: Path, dtype: Any, shape: tuple[int, ...]) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.shape = shape
        header = {
            "descr": np.lib.format.dtype_to_descr(self.dtype),
            "fortran_order": False,
            "shape": shape,
        }
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, header)
            self.data_start = f.tell()
        self.row_bytes = self.dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
        self.fd = os.open(path, os.O_RDWR)
        total = self.data_start + self.row_bytes * shape[0]
        try:
            os.posix_fallocate(self.fd, 0, total)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                os.close(self.fd)
                raise
            os.ftruncate(self.fd, total)  # no reservation here; pwrite still reports ENOSPC
        except AttributeError:  # pragma: no cover - no posix_fallocate on this platform
            os.ftruncate(self.fd, total)

    def write(self, row: int, values: np.ndarray) -> None:
        """Write ``values`` (rows ``row..row + len(values)``, this file's dtype and row shape)."""
        if values.dtype != self.dtype or values.shape[1:] != self.shape[1:]:
            raise ValueError(f"{self.path.name}: got {values.dtype} {values.shape}")
        if values.size == 0:
            return
        data = np.ascontiguousarray(values).data.cast("B")
        offset = self.data_start + row * self.row_bytes
        while len(data):
            done = os.pwrite(self.fd, data, offset)
            data, offset = data[done:], offset + done

    def close(self) -> None:
        """fsync and close (idempotent)."""
        if self.fd >= 0:
            try:
                os.fsync(self.fd)
            finally:
                os.close(self.fd)
                self.fd = -1


def _save(path: Path, array: np.ndarray) -> None:
    writer = _NpyWriter(path, array.dtype, array.shape)
    try:
        if len(array):
            writer.write(0, array)
    finally:
        writer.close()


def _chunk_digest(path: Path, start: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        f.seek(start)
        left = size
        while left:
            block = f.read(min(left, 8 << 20))
            if not block:
                break  # truncated under us: the digest will not match
            h.update(block)
            left -= len(block)
    return h.hexdigest()


def _digests(path: Path, size: int, pool: concurrent.futures.Executor) -> list[str]:
    starts = range(0, max(size, 1), CHUNK_BYTES)
    return list(pool.map(lambda s: _chunk_digest(path, s, min(CHUNK_BYTES, size - s)), starts))


@contextmanager
def _hash_pool() -> Iterator[concurrent.futures.Executor]:
    workers = max(1, min(8, os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:  # hashlib releases the GIL
        yield pool


def _meta_digest(meta: dict[str, Any]) -> str:
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _verify(folder: Path) -> dict[str, Any]:
    """``meta.json`` of a verified entry: every file's size and chunk digests match.

    Raises:
        CacheError: not a cache folder (no ``meta.json``) or another format.
        CorruptCacheError: unreadable metadata, a missing file, a size or checksum mismatch.
    """
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        raise CacheError(f"{folder}: not a feature cache (no meta.json)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCacheError(f"{folder}: meta.json is unreadable ({exc})") from None
    if not isinstance(meta, dict):
        raise CorruptCacheError(f"{folder}: meta.json is not an object")
    if (meta.get("format") == FORMAT or "meta_sha256" in meta) and meta.get(
        "meta_sha256"
    ) != _meta_digest(meta):
        raise CorruptCacheError(f"{folder}: meta.json checksum mismatch")
    if meta.get("format") != FORMAT:
        raise CacheError(f"{folder}: format {meta.get('format')!r}, expected {FORMAT}")
    with _hash_pool() as pool:
        for name, record in meta["files"].items():
            path = folder / name
            try:
                size = path.stat().st_size
            except OSError:
                raise CorruptCacheError(f"{folder}: {name} is missing") from None
            if size != record["bytes"]:
                raise CorruptCacheError(
                    f"{folder}: {name} has {size} bytes, expected {record['bytes']} (truncated?)"
                )
            if _digests(path, size, pool) != record["sha256"]:
                raise CorruptCacheError(f"{folder}: {name} checksum mismatch (corrupted bytes)")
    return meta


# --------------------------------------------------------------------------- entry building
@contextmanager
def _building(root: Path, folder: Path) -> Iterator[Path]:
    """A fresh hidden folder under ``root`` to write the entry ``folder`` into.

    On any error the folder is removed (the root's other entries are untouched); a full disk is
    re-raised as :class:`CacheSpaceError`.
    """
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=root))
    try:
        yield tmp
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise CacheSpaceError(
                exc.errno,
                f"disk full while writing feature cache entry {folder.name} under {root}; "
                "the partial entry was removed and the existing entries are intact (free "
                "disk space or lower --cache-budget)",
            ) from exc
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _entry_meta(
    representation: Representation, rep_fp: str, data_fp: str, sequences: int, dtype: str, k: int
) -> dict[str, Any]:
    """What ``meta.json`` records of an entry, besides its files' digests."""
    return {
        "format": FORMAT,
        "name": representation.name,
        "representation_fingerprint": rep_fp,
        "data_fingerprint": data_fp,
        "num_layers": representation.num_layers,
        "output_dim": representation.output_dim,
        "dtype": dtype,
        "num_sequences": sequences,
        "form": "reduced" if k else "full",
        "context_free_layers": k,
        "chunk_bytes": CHUNK_BYTES,
    }


def _write_meta(folder: Path, files: Sequence[str], meta: dict[str, Any]) -> None:
    """Write ``meta.json`` (last): ``meta``, each file's size and chunk digests, its own digest."""
    with _hash_pool() as pool:
        meta["files"] = {
            name: {"bytes": size, "sha256": _digests(folder / name, size, pool)}
            for name in files
            for size in [(folder / name).stat().st_size]
        }
    meta["meta_sha256"] = _meta_digest(meta)
    write_json(folder / "meta.json", meta, indent=2)


def _publish(tmp: Path, folder: Path) -> bool:
    """Rename the written ``tmp`` to ``folder`` (atomic on one file system).

    Returns:
        False when another process published ``folder`` meanwhile (``tmp`` is then removed).
    """
    try:
        os.rename(tmp, folder)
    except OSError:
        if not (folder / "meta.json").is_file():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    return True


def _longest_first(
    representation: Representation,
    sequences: Sequence[Sequence[str]],
    lengths: np.ndarray,
    batch_size: int,
) -> Iterator[tuple[list[int], np.ndarray]]:
    """The non-empty sequences run longest first (least padding), ``batch_size`` at a time.

    Yields:
        The batch's sequence indices and its layers, float32 ``(batch, time, num_layers, dim)``.

    Raises:
        CacheError: the representation returned layers of another shape than it declares.
    """
    order = sorted(range(len(sequences)), key=lambda i: -int(lengths[i]))  # longest first
    order = [i for i in order if lengths[i] > 0]
    num_layers, dim = representation.num_layers, representation.output_dim
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        out = representation(representation.featurize([sequences[i] for i in rows]))
        expected = (num_layers, len(rows), int(lengths[rows[0]]), dim)
        if tuple(out.tensors.shape) != expected:
            raise CacheError(
                f"{representation.name!r} returned {tuple(out.tensors.shape)}, expected {expected}"
            )
        yield rows, out.tensors.detach().float().cpu().permute(1, 2, 0, 3).numpy()  # (B, T, L, D)


def _stored(values: np.ndarray, dtype: Any, sequence: int) -> np.ndarray:
    """One sequence's float32 ``(len, L, D)`` values in the stored ``dtype``.

    Raises:
        OverflowError: a value does not fit ``dtype`` (or is NaN).
    """
    with np.errstate(over="ignore"):  # reported below, with advice
        chunk = values.astype(dtype)  # (len, L, D)
    if not np.isfinite(chunk).all():
        raise OverflowError(
            f"sequence {sequence}: values overflow {np.dtype(dtype).name} (or are NaN); "
            "use dtype='float32'"
        )
    return chunk


# ------------------------------------------------------------------------------------ cache
class FeatureCache:
    """A built cache entry, verified and memory-mapped; open with :meth:`build` (or directly).

    Args:
        path: the entry folder (holding ``meta.json``).
        verify: check every file's size and checksums before reading anything (default).

    Raises:
        CacheError: not a complete cache folder, or another format.
        CorruptCacheError: a file failed verification.
    """

    def __init__(self, path: str | Path, verify: bool = True) -> None:
        self.path = Path(path)
        if not (self.path / "meta.json").is_file():
            raise CacheError(f"{self.path}: not a feature cache (no meta.json)")
        self._lock: int | None = _shared_lock(self.path / _USED)  # no eviction while open
        try:
            if verify:
                self.meta: dict[str, Any] = _verify(self.path)
            else:
                self.meta = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
                if self.meta.get("format") != FORMAT:
                    raise CacheError(f"{self.path}: format {self.meta.get('format')!r}")
            self.offsets: np.ndarray = np.load(self.path / "offsets.npy")  # (num_sequences + 1,)
        except BaseException:
            self.close()
            raise
        self.lengths: np.ndarray = np.diff(self.offsets)  # (num_sequences,)
        self.num_layers: int = int(self.meta["num_layers"])
        self.output_dim: int = int(self.meta["output_dim"])
        self.dtype: str = str(self.meta["dtype"])
        self.form: str = str(self.meta["form"])  # "full" | "reduced"
        self.context_free_layers: int = int(self.meta["context_free_layers"])
        self.representation_fingerprint: str = str(self.meta["representation_fingerprint"])
        self.data_fingerprint: str = str(self.meta["data_fingerprint"])
        self.reused = False  # True when build() found it already there
        self._arrays: dict[str, np.ndarray] = {}
        try:
            os.utime(self.path / _USED)  # last use, for LRU eviction
        except OSError:
            pass  # a read-only cache still works; it just is not reordered

    def close(self) -> None:
        """Release the entry (it may then be evicted); lookups reopen the memory maps."""
        self._arrays = {}
        if getattr(self, "_lock", None) is not None:
            os.close(self._lock)  # type: ignore[arg-type]
            self._lock = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the OS releases the lock anyway
            pass

    # ------------------------------------------------------------------ building
    @staticmethod
    def folder_for(
        representation: Representation,
        sequences: Sequence[Sequence[str]],
        root: str | Path,
        dtype: str | torch.dtype = "float16",
        precision: str = "fp32",
    ) -> Path:
        """Where :meth:`build` puts (or finds) the cache of this representation and data."""
        return FeatureCache._folder(
            Path(root),
            representation.name,
            _keyed_fingerprint(representation.fingerprint(), precision),
            data_fingerprint(sequences),
            _dtype_name(dtype),
        )

    @staticmethod
    def _folder(root: Path, name: str, rep_fp: str, data_fp: str, dtype: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:40] or "repr"
        return root / f"{safe}-{rep_fp[:16]}-{data_fp[:16]}-{dtype}"

    @classmethod
    def build(
        cls,
        representation: Representation,
        sequences: Sequence[Sequence[str]],
        root: str | Path,
        dtype: str | torch.dtype = "float16",
        batch_size: int = 32,
        progress: bool = True,
        budget: str | int | None = None,
        reduced: bool = True,
        precision: str = "fp32",
    ) -> FeatureCache:
        """Return the cache for ``representation`` over ``sequences``, building it if needed.

        Args:
            representation: a frozen representation (not ``state_policy == "carry"``).
            sequences: the dataset's token sequences; cache index ``i`` is ``sequences[i]``.
            root: folder holding caches (created if needed).
            dtype: ``"float16"`` (half the disk; about 3 significant digits) or ``"float32"``.
            batch_size: sequences per representation call.
            progress: show a progress bar (stderr).
            budget: bytes the root's entries may hold (:func:`parse_budget`; default
                :data:`DEFAULT_BUDGET`); least-recently used entries are evicted to fit.
            reduced: store the representation's declared context-free layers once per word
                (bit-identical lookups); ``False`` always writes the full form.
            precision: ``"fp32"`` (exact) or ``"bf16"`` (a biLM representation run with
                :meth:`bilm.BiLM.to_precision`; a separate entry; module docstring).

        Raises:
            CacheError: the representation cannot be cached (or has no bf16 arithmetic).
            CacheSpaceError: the entry does not fit the budget or the disk (nothing changed).
            OverflowError: a value does not fit in float16 (use float32).
        """
        check_cacheable(representation)
        _check_precision(representation, precision)
        dtype_name = _dtype_name(dtype)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        parse_budget(budget)  # fail early on a bad budget
        k = context_free_layers(representation) if reduced else 0
        root = Path(root)
        rep_fp = _keyed_fingerprint(representation.fingerprint(), precision)
        data_fp = data_fingerprint(sequences)
        folder = cls._folder(root, representation.name, rep_fp, data_fp, dtype_name)
        existing = cls._open_existing(folder, rep_fp, data_fp)
        if existing is not None:
            return existing
        root.mkdir(parents=True, exist_ok=True)
        needed = cls._estimate_bytes(representation, sequences, dtype_name, k)
        _make_room(root, needed, resolve_budget(budget, root), folder.name)
        with _building(root, folder) as tmp:
            with _running_in(representation, precision):
                files = cls._write(
                    tmp, representation, sequences, dtype_name, k, batch_size, progress
                )
            (tmp / _USED).touch()
            meta = _entry_meta(representation, rep_fp, data_fp, len(sequences), dtype_name, k)
            if precision != "fp32":
                meta["precision"] = precision
            _write_meta(tmp, files, meta)
            if not _publish(tmp, folder):
                return cls._reuse(folder, rep_fp, data_fp)  # another process built it meanwhile
        return cls(folder, verify=False)  # its digests were just computed from these files

    @classmethod
    def _open_existing(cls, folder: Path, rep_fp: str, data_fp: str) -> FeatureCache | None:
        """The verified entry at ``folder``; ``None`` (after removing it) when unusable."""
        if not (folder / "meta.json").is_file():
            return None
        try:
            return cls._reuse(folder, rep_fp, data_fp)
        except CorruptCacheError as exc:
            _say(f"{exc}; not read, removed, rebuilding")
        except CacheError as exc:
            if "fingerprint prefix collision" in str(exc):
                raise
            _say(f"{exc}; removed, rebuilding")
        _remove(folder)
        return None

    @classmethod
    def _reuse(cls, folder: Path, rep_fp: str, data_fp: str) -> FeatureCache:
        cache = cls(folder)
        if (cache.representation_fingerprint, cache.data_fingerprint) != (rep_fp, data_fp):
            cache.close()
            raise CacheError(f"{folder}: fingerprint prefix collision; delete the folder")
        cache.reused = True
        return cache

    @staticmethod
    def _estimate_bytes(
        representation: Representation, sequences: Sequence[Sequence[str]], dtype: str, k: int
    ) -> int:
        """Bytes of the entry (exact for the full form; words counted once for the reduced)."""
        tokens = sum(len(s) for s in sequences)
        item, dim = np.dtype(dtype).itemsize, representation.output_dim
        num_layers = representation.num_layers
        size = 8 * (len(sequences) + 1) + 4 * 128 + 2048  # offsets, .npy headers, meta.json
        if not k:
            return size + tokens * num_layers * dim * item
        words = len({w for s in sequences for w in s})
        return size + tokens * ((num_layers - k) * dim * item + 4) + words * k * dim * item

    @staticmethod
    def _write(
        folder: Path,
        representation: Representation,
        sequences: Sequence[Sequence[str]],
        dtype_name: str,
        k: int,
        batch_size: int,
        progress: bool,
    ) -> list[str]:
        """Run the representation and write the entry's arrays; returns the file names."""
        np_dtype = _DTYPES[dtype_name]
        lengths = np.array([len(s) for s in sequences], dtype=np.int64)  # (num_sequences,)
        offsets = np.zeros(len(sequences) + 1, dtype=np.int64)  # (num_sequences + 1,)
        np.cumsum(lengths, out=offsets[1:])
        total, dim = int(offsets[-1]), representation.output_dim
        _save(folder / "offsets.npy", offsets)
        name = "context.npy" if k else "layers.npy"
        per_token = _NpyWriter(folder / name, np_dtype, (total, representation.num_layers - k, dim))
        words = _WordTable(k, dim, np_dtype) if k else None
        token_rows = np.zeros(total, dtype=np.int32) if k else None  # (total_tokens,)
        try:
            with (
                torch.no_grad(),
                exact_fp32(),  # the cached features are the float32 ones, also on CUDA
                progress_bar(progress, total=total, unit="tok", leave=False) as bar,
            ):
                for rows, values in _longest_first(representation, sequences, lengths, batch_size):
                    for row, i in enumerate(rows):
                        chunk = _stored(values[row, : lengths[i]], np_dtype, i)  # (len_i, L, D)
                        per_token.write(int(offsets[i]), chunk[:, k:])  # (len_i, L - k, D)
                        if words is not None and token_rows is not None:
                            token_rows[offsets[i] : offsets[i + 1]] = words.rows(
                                sequences[i], chunk[:, :k]
                            )  # (len_i,)
                    bar.update(int(lengths[rows].sum()))
        finally:
            per_token.close()
        if words is None or token_rows is None:
            return ["offsets.npy", name]
        _save(folder / "words.npy", words.array())
        _save(folder / "token_rows.npy", token_rows)
        return ["offsets.npy", name, "words.npy", "token_rows.npy"]

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def num_tokens(self) -> int:
        """Tokens over all sequences."""
        return int(self.offsets[-1])

    def _array(self, name: str, shape: tuple[int, ...] | None) -> np.ndarray:
        """A memory map of ``name`` (copy-on-write, so torch can wrap it; never written)."""
        array = self._arrays.get(name)
        if array is None:
            array = np.load(self.path / name, mmap_mode="c")
            if shape is not None and array.shape != shape:
                raise CacheError(f"{self.path}: {name} has shape {array.shape}, expected {shape}")
            self._arrays[name] = array
        return array

    @staticmethod
    def _read_only(array: np.ndarray) -> np.ndarray:
        view = array.view()
        view.flags.writeable = False
        return view

    @property
    def layers(self) -> np.ndarray:
        """The memory-mapped ``(total_tokens, num_layers, dim)`` array of the full form (read-only).

        Raises:
            CacheError: a reduced entry (use :meth:`lookup`, :attr:`context` and :attr:`words`).
        """
        if self.form != "full":
            raise CacheError(f"{self.path}: a reduced entry has no per-token layers.npy")
        shape = (self.num_tokens, self.num_layers, self.output_dim)
        return self._read_only(self._array("layers.npy", shape))

    def _context(self) -> np.ndarray:
        if self.form == "full":
            return self._array("layers.npy", (self.num_tokens, self.num_layers, self.output_dim))
        shape = (self.num_tokens, self.num_layers - self.context_free_layers, self.output_dim)
        return self._array("context.npy", shape)

    def _words(self) -> np.ndarray:
        array = self._array("words.npy", None)
        if array.shape[1:] != (self.context_free_layers, self.output_dim):
            raise CacheError(f"{self.path}: words.npy has shape {array.shape}")
        return array

    @property
    def context(self) -> np.ndarray:
        """Per-token layers ``k..``: memory-mapped ``(total_tokens, num_layers - k, dim)``."""
        return self._read_only(self._context())

    @property
    def words(self) -> np.ndarray:
        """Per-word layers ``..k`` of a reduced entry: ``(num_rows, k, dim)``, memory-mapped."""
        return self._read_only(self._words())

    @property
    def token_rows(self) -> np.ndarray:
        """Each token's row of :attr:`words` (reduced entries): ``(total_tokens,)`` int32."""
        return self._read_only(self._array("token_rows.npy", (self.num_tokens,)))

    def lookup(self, indices: Sequence[int], device: torch.device | str | None = None) -> Layers:
        """Layers of the given sequences, right-padded with zeros, as float32.

        Values are converted from the memory map straight into the batch's tensor: no
        intermediate float32 or permuted copy of the batch.

        Args:
            indices: sequence indices (positions in the ``sequences`` given to :meth:`build`).
            device: where to put the tensors (default CPU).

        Returns:
            :class:`Layers` with ``tensors (num_layers, batch, time, dim)`` and ``mask``.
        """
        idx = np.asarray(list(indices), dtype=np.int64)  # (batch,)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self)):
            raise IndexError(f"cache index out of range 0..{len(self) - 1}")
        lengths = self.lengths[idx]  # (batch,)
        time_ = int(lengths.max()) if idx.size else 0
        k = self.context_free_layers
        tensors = torch.empty(self.num_layers, len(idx), time_, self.output_dim)  # (L, B, T, D)
        context = torch.from_numpy(self._context())  # (total_tokens, L - k, D)
        words = torch.from_numpy(self._words()) if k else None  # (num_rows, k, D)
        token_rows = torch.from_numpy(self._array("token_rows.npy", None)) if k else None
        for row, i in enumerate(idx):
            start, n = int(self.offsets[i]), int(lengths[row])
            if k < self.num_layers:
                source = context[start : start + n]  # (n, L - k, D), stored dtype
                tensors[k:, row, :n].copy_(source.permute(1, 0, 2))  # (L - k, n, D)
            if words is not None and token_rows is not None:
                picked = words.index_select(0, token_rows[start : start + n].long())  # (n, k, D)
                tensors[:k, row, :n].copy_(picked.permute(1, 0, 2))  # (k, n, D)
            tensors[:, row, n:] = 0.0  # padding, exactly 0
        mask = torch.arange(time_)[None, :] < torch.from_numpy(lengths)[:, None]  # (B, T)
        layers = Layers(tensors, mask)
        return layers.to(device) if device is not None else layers

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_arrays"] = {}  # workers re-open the memory maps instead of pickling the data
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = _shared_lock(self.path / _USED)  # this copy also keeps the entry in use


class _WordTable:
    """The distinct values of the context-free layers, one row per word (more if a word's value
    differs between occurrences), grown in memory while building.

    Args:
        k: context-free layers.
        dim: layer width.
        dtype: stored dtype.
    """

    def __init__(self, k: int, dim: int, dtype: Any) -> None:
        self.values = np.zeros((1024, k, dim), dtype=dtype)  # (capacity, k, D)
        self.count = 0
        self.first: dict[str, int] = {}  # word -> its first row
        self.variants: dict[str, list[int]] = {}  # word -> further rows (rarely any)

    def _append(self, value: np.ndarray) -> int:
        if self.count == len(self.values):
            grown = np.zeros((2 * len(self.values), *self.values.shape[1:]), self.values.dtype)
            grown[: self.count] = self.values
            self.values = grown
        self.values[self.count] = value
        self.count += 1
        return self.count - 1

    def rows(self, tokens: Sequence[str], values: np.ndarray) -> np.ndarray:
        """Rows holding each token's exact (bitwise) value; ``values`` is ``(n, k, D)``."""
        rows = np.empty(len(tokens), dtype=np.int64)  # (n,)
        for t, word in enumerate(tokens):
            row = self.first.get(word)
            if row is None:
                row = self.first[word] = self._append(values[t])
            rows[t] = row
        bits = np.uint16 if values.dtype.itemsize == 2 else np.uint32
        stored = self.values[rows].view(bits)  # (n, k, D)
        same = (stored == values.view(bits)).all(axis=(1, 2))  # (n,)
        for t in np.flatnonzero(~same).tolist():
            word, want = tokens[t], values[t].view(bits)
            others = self.variants.setdefault(word, [])
            match = next((r for r in others if (self.values[r].view(bits) == want).all()), None)
            if match is None:
                match = self._append(values[t])
                others.append(match)
            rows[t] = match
        return rows

    @property
    def num_variants(self) -> int:
        """Rows beyond one per word."""
        return sum(len(v) for v in self.variants.values())

    def array(self) -> np.ndarray:
        """The table, ``(rows, k, D)``."""
        return self.values[: self.count]
