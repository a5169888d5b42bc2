"""Unpacking a task's committed DEMO set into the cache (one function for every task).

Each task commits its generated demo files (gzip-compressed) beside its generator; on first use
they are unpacked into ``<cache>/<task>-demo-<content hash>``, so a changed demo set never reuses
stale files and a clone without ``../shared`` runs every target.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections.abc import Iterable, Mapping
from pathlib import Path

from bilm.files import write_bytes


def content_hash(data_dir: str | Path, sources: Iterable[str]) -> str:
    """First 12 hex digits of the SHA-256 of the committed files ``sources`` (in order)."""
    digest = hashlib.sha256()
    for name in sources:
        digest.update((Path(data_dir) / name).read_bytes())
    return digest.hexdigest()[:12]


def gzip_text(text: str) -> bytes:
    """Deterministic gzip of UTF-8 ``text`` (no file name, mtime 0): a rebuilt demo set is
    byte-identical to the committed one."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", compresslevel=9, fileobj=buffer, mtime=0) as gz:
        gz.write(text.encode("utf-8"))
    return buffer.getvalue()


def _unpack(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, data)  # atomic: concurrent first uses never see half a file


def unpack_demo(
    task: str,
    data_dir: str | Path,
    files: Mapping[str, str],
    texts: Mapping[str, str] | None = None,
    cache: str | Path | None = None,
) -> Path:
    """The folder holding the unpacked demo set, unpacked on first use.

    Args:
        task: the folder's prefix (``<task>-demo-<hash>``).
        data_dir: the committed files.
        files: destination path (relative, may contain folders) → committed file name; ``.gz``
            files are decompressed, others copied. Their contents name the folder.
        texts: destination path → text written as is (e.g. a DEMO notice).
        cache: defaults to :func:`bilm.pretrained.cache_root` (``$ELMO_BENCH_CACHE``, else
            ``~/.cache/elmo-bench``).
    """
    if cache is None:
        from bilm.pretrained import cache_root

        cache = cache_root()
    texts = texts or {}
    out = Path(cache) / f"{task}-demo-{content_hash(data_dir, files.values())}"
    if all((out / name).exists() for name in (*files, *texts)):
        return out
    for dest, source in files.items():
        data = (Path(data_dir) / source).read_bytes()
        _unpack(out / dest, gzip.decompress(data) if source.endswith(".gz") else data)
    for dest, text in texts.items():
        _unpack(out / dest, text.encode("utf-8"))
    return out
