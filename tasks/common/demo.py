"""Unpacking a task's committed DEMO set into the cache (one function for every task).

Each task commits its generated demo files (gzip-compressed) beside its generator; on first use
they are unpacked into ``<cache>/<task>-demo-<content hash>``, so a changed demo set never reuses
stale files and a clone without ``../shared`` runs every target. Every use checks the unpacked
copy against the committed files (a few MB, milliseconds) and rewrites any file that differs,
with a warning naming it: an edited or damaged cache never feeds a run.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from bilm.files import write_bytes

logger = logging.getLogger(__name__)


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
    """The folder holding the unpacked demo set, unpacked on first use and verified on every use.

    Each unpacked file is compared with its committed source (decompressed) on every call; a
    file that differs (edited, truncated, damaged) is rewritten from the committed one, with a
    one-line warning naming it, so a run never reads a changed copy under the demo set's name.

    Args:
        task: the folder's prefix (``<task>-demo-<hash>``).
        data_dir: the committed files.
        files: destination path (relative, may contain folders) → committed file name; ``.gz``
            files are decompressed, others copied. Their contents name the folder.
        texts: destination path → text written as is (e.g. a DEMO notice).
        cache: defaults to :func:`bilm.pretrained.cache_root` (``$ELMO_BENCH_CACHE``, else
            ``~/.cache/elmo-bench``).

    Raises:
        FileNotFoundError: a committed file is missing (an installation without the task's
            ``demo_data``); the message names the files and the ``--data`` way out.
    """
    if cache is None:
        from bilm.pretrained import cache_root

        cache = cache_root()
    texts = texts or {}
    missing = [str(Path(data_dir) / name) for name in files.values()]
    missing = [path for path in missing if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(
            f"the DEMO set of {task} is not in this installation (missing: "
            f"{', '.join(missing)}); reinstall elmo-bench (its wheel carries every task's "
            f"demo_data), or train on your own copy of the data with --data DIR"
        )
    out = Path(cache) / f"{task}-demo-{content_hash(data_dir, files.values())}"
    expected = {
        dest: (_committed_bytes(Path(data_dir) / source), str(Path(data_dir) / source))
        for dest, source in files.items()
    }
    expected.update(
        {dest: (text.encode("utf-8"), f"{task} demo text") for dest, text in texts.items()}
    )
    for dest, (data, origin) in expected.items():
        path = out / dest
        if path.is_file() and path.read_bytes() == data:
            continue
        if path.exists():
            logger.warning("demo cache file %s differs from the bundled %s; rebuilt", path, origin)
        _unpack(path, data)
    return out


def _committed_bytes(path: Path) -> bytes:
    """A committed demo file's unpacked content (``.gz`` files decompressed)."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data
