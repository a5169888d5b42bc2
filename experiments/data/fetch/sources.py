"""The source files of the real sets: from a local folder, the download cache or the network.

Every file, wherever it comes from, must have the SHA-256 the manifest pins; a file that has
another is refused (never converted). Downloads are kept in a cache folder laid out as
``<cache>/<repository key>/<path>``, which is itself a valid ``--from`` folder; a cached file is
verified again before use and downloaded anew when it no longer matches.

A ``--from`` folder (offline use) may hold, for a file ``path`` of repository ``key``:

* ``DIR/<key>/<path>``: the upstream repositories checked out (or copied) side by side, named by
  their keys (``litbank``, ``propbank-release``, ``nltk_data``);
* ``DIR/<path>``: one repository's checkout, or the files laid out by their paths;
* for nltk_data, also ``DIR/corpora/<name>.zip``: an installed NLTK data folder
  (``~/nltk_data``), which leaves out the repository's leading ``packages/``.
"""

from __future__ import annotations

import http.client
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bilm.pretrained import sha256_of
from experiments.data.fetch.manifest import SourceFile

__all__ = [
    "ChecksumMismatch",
    "SourceError",
    "cache_path",
    "download",
    "from_folder",
    "gather",
    "local_candidates",
    "offline_hint",
]

#: Seconds a download may wait for the server before it fails.
TIMEOUT_S = 60
#: Downloads in flight at once.
WORKERS = 8


class SourceError(ValueError):
    """A source file could not be had (the message names it, and what to do)."""


class ChecksumMismatch(SourceError):
    """A source file is not the pinned version (the message names it and both digests)."""


def offline_hint(file: SourceFile) -> str:
    """How to give ``file`` (and its set's other files) without this machine's network."""
    repo = file.repository
    return (
        f"offline, give the sources with --from DIR: this file as DIR/{repo.key}/{file.path}, and "
        "likewise every file of the set in experiments/data/real_sources.toml (a checkout of "
        f"https://github.com/{repo.github} at {repo.commit} as DIR/{repo.key}, or a copy of the "
        "download cache of a machine that fetched them), then run "
        "python -m experiments real-data fetch --from DIR (docs/real_data.md)"
    )


def local_candidates(root: Path, file: SourceFile) -> list[Path]:
    """Where a ``--from`` folder may hold ``file``, in the order they are tried."""
    repo = file.repository
    found = [root / repo.key / file.path, root / file.path]
    if repo.installed_prefix and file.path.startswith(repo.installed_prefix):
        rest = file.path.removeprefix(repo.installed_prefix)
        found += [root / repo.key / rest, root / rest]
    return found


def _verified(path: Path, file: SourceFile, origin: str) -> Path:
    digest = sha256_of(path)
    if digest != file.sha256:
        raise ChecksumMismatch(
            f"{path} ({origin} {file.label}) has sha256 {digest}, but the manifest pins "
            f"{file.sha256}: it is not the file at {file.repository.short}; refusing it"
        )
    return path


def from_folder(root: Path, file: SourceFile) -> Path:
    """``file`` in a local folder (``--from``), verified.

    Raises:
        SourceError: it is not there (the message names where it was looked for).
        ChecksumMismatch: it is there with other content.
    """
    candidates = local_candidates(root, file)
    for path in candidates:
        if path.is_file():
            return _verified(path, file, "for")
    looked = ", ".join(str(p) for p in candidates)
    raise SourceError(f"--from {root}: no {file.label} (looked for {looked})")


def cache_path(cache: Path, file: SourceFile) -> Path:
    """Where the download cache keeps ``file``."""
    return cache / file.repository.key / file.path


def download(file: SourceFile, cache: Path, timeout: float = TIMEOUT_S) -> Path:
    """``file`` from the download cache, else downloaded into it; verified either way.

    The download is written to a hidden temporary beside its place and renamed there only once
    complete and verified, so the cache never holds a cut or wrong file.

    Raises:
        SourceError: the download failed (the message names the URL and how to work offline).
        ChecksumMismatch: the server sent other content than the manifest pins.
    """
    dest = cache_path(cache, file)
    if dest.is_file():
        if sha256_of(dest) == file.sha256:
            return dest
        dest.unlink()  # a stale or damaged copy: fetch it again
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.{os.getpid()}-{threading.get_ident()}.part")
    try:
        try:
            with urllib.request.urlopen(file.url, timeout=timeout) as response:  # noqa: S310
                with part.open("wb") as out:
                    while block := response.read(1 << 20):
                        out.write(block)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", None) or error
            raise SourceError(
                f"could not download {file.url} ({reason}); {offline_hint(file)}"
            ) from None
        digest = sha256_of(part)
        if digest != file.sha256:
            raise ChecksumMismatch(
                f"{file.url} ({file.label}) downloaded with sha256 {digest}, but the manifest "
                f"pins {file.sha256}: refusing it"
            )
        os.replace(part, dest)
    finally:
        part.unlink(missing_ok=True)
    return dest


def gather(
    files: Sequence[SourceFile], *, source: Path | None, cache: Path, workers: int = WORKERS
) -> dict[SourceFile, Path]:
    """Every file of ``files``, verified: from ``source`` when given (nothing is downloaded),
    else from the cache or the network (``workers`` downloads at once).

    Raises:
        SourceError: the first file (in ``files``' order) that could not be had or is not the
            pinned version; the message says how many others failed too.
    """
    if source is not None:
        return {file: from_folder(source, file) for file in files}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(download, file, cache) for file in files]
    found: dict[SourceFile, Path] = {}
    errors: list[SourceError] = []
    for file, future in zip(files, futures, strict=True):
        error = future.exception()
        if error is None:
            found[file] = future.result()
        elif isinstance(error, SourceError):
            errors.append(error)
        else:
            raise error
    if errors:
        more = f" (and {len(errors) - 1} other files failed)" if len(errors) > 1 else ""
        raise type(errors[0])(f"{errors[0]}{more}")
    return found
