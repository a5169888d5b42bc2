"""Published ELMo files: where they are, and an explicit, verified download.

Nothing here runs at import. :func:`download` is the only function that touches the network; it
writes to a temporary file and renames it, and verifies a SHA-256 when one is known or given.

The URLs are the ones allennlp's documentation and configs point to (allennlp ``modules/elmo.py``
docstrings, ``training_config`` files). AI2 published no checksums; ``sha256`` is ``None`` for
those entries, and :func:`download` then reports the digest it computed so you can pin it with
``sha256=...`` on the next machine.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bilm.files import atomic_path, write_text

_S3 = "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo"


@dataclass(frozen=True)
class PublishedFile:
    """One downloadable file."""

    url: str
    sha256: str | None = None


@dataclass(frozen=True)
class PublishedModel:
    """An options + weights pair."""

    options: PublishedFile
    weights: PublishedFile
    note: str


def _model(folder: str, stem: str, note: str) -> PublishedModel:
    base = f"{_S3}/{folder}/{stem}"
    return PublishedModel(
        PublishedFile(f"{base}_options.json"), PublishedFile(f"{base}_weights.hdf5"), note
    )


#: The models of the ELMo paper and allennlp's ELMo page.
PUBLISHED: dict[str, PublishedModel] = {
    "original": _model(
        "2x4096_512_2048cnn_2xhighway",
        "elmo_2x4096_512_2048cnn_2xhighway",
        "the paper's biLM: 1B Word Benchmark, 93.6 M parameters",
    ),
    "original-5.5B": _model(
        "2x4096_512_2048cnn_2xhighway_5.5B",
        "elmo_2x4096_512_2048cnn_2xhighway_5.5B",
        "same architecture trained on 5.5 B tokens (Wikipedia + WMT news)",
    ),
    "medium": _model(
        "2x2048_256_2048cnn_1xhighway",
        "elmo_2x2048_256_2048cnn_1xhighway",
        "LSTM 2048, projection 256, 1 highway layer",
    ),
    "small": _model(
        "2x1024_128_2048cnn_1xhighway",
        "elmo_2x1024_128_2048cnn_1xhighway",
        "LSTM 1024, projection 128, 1 highway layer",
    ),
}


class ChecksumError(RuntimeError):
    """A downloaded file does not have the expected SHA-256."""


def sha256_of(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file, streamed."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def download(
    url: str,
    cache_dir: str | Path,
    sha256: str | None = None,
    progress: Callable[[int, int | None], None] | None = None,
) -> tuple[Path, str]:
    """Fetch ``url`` into ``cache_dir`` (skipped when already there and valid).

    Args:
        url: http(s) or file URL.
        cache_dir: destination folder; the file keeps its URL basename.
        sha256: expected digest; a mismatch deletes the download and raises.
        progress: called with (bytes so far, total or None).

    Returns:
        ``(path, sha256)`` of the file.

    Raises:
        ChecksumError: digest mismatch.
        urllib.error.URLError: the network failed (the partial file is removed).
    """
    dest = Path(cache_dir) / url.rstrip("/").rsplit("/", 1)[-1]
    if dest.exists():
        digest = sha256_of(dest)
        if sha256 is None or digest == sha256:
            return dest, digest
        dest.unlink()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(dest) as tmp:  # dest appears only once complete and verified
        with urllib.request.urlopen(url) as response, tmp.open("wb") as out:  # noqa: S310
            total = response.headers.get("Content-Length")
            size = int(total) if total else None
            done = 0
            while block := response.read(1 << 20):
                out.write(block)
                done += len(block)
                if progress:
                    progress(done, size)
        digest = sha256_of(tmp)
        if sha256 is not None and digest != sha256:
            raise ChecksumError(f"{url}: sha256 {digest} != expected {sha256}")
    return dest, digest


def fetch_published(name: str, cache_dir: str | Path) -> tuple[Path, Path]:
    """Download a published model's options and weights; returns their paths.

    Raises:
        KeyError: unknown name (the message lists the known ones).
    """
    if name not in PUBLISHED:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(PUBLISHED)}")
    model = PUBLISHED[name]
    options, _ = download(model.options.url, cache_dir, model.options.sha256)
    weights, _ = download(model.weights.url, cache_dir, model.weights.sha256)
    return options, weights


def cache_root() -> Path:
    """The project's cache folder: ``$ELMO_BENCH_CACHE``, else ``~/.cache/elmo-bench``."""
    root = os.environ.get("ELMO_BENCH_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "elmo-bench"


def default_cache_dir() -> Path:
    """Published files go to ``cache_root() / "elmo"``."""
    return cache_root() / "elmo"


def published_files(name: str, cache_dir: str | Path | None = None) -> tuple[Path, Path]:
    """A published model's ``(options.json, weights.hdf5)``: from the cache, else downloaded.

    AI2 published no checksums, so the first download's SHA-256 is written beside each file
    (``<file>.sha256``) and every later use is verified against it (and against
    :data:`PUBLISHED`'s digest where one is known); a file placed by hand is pinned the same way
    on first use.

    Raises:
        KeyError: unknown name (the known ones are listed).
        FileNotFoundError: a file is not cached and cannot be downloaded (offline): the message
            names the URL and the exact path to place it at.
        ChecksumError: a cached file no longer matches its recorded or known digest.
    """
    import urllib.error

    if name not in PUBLISHED:
        raise KeyError(f"unknown published ELMo {name!r}; known: {', '.join(PUBLISHED)}")
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    paths = []
    for entry in (PUBLISHED[name].options, PUBLISHED[name].weights):
        dest = folder / entry.url.rsplit("/", 1)[-1]
        pin = dest.with_name(dest.name + ".sha256")
        expected = entry.sha256 or (pin.read_text().strip() if pin.exists() else None)
        try:
            path, digest = download(entry.url, folder, expected)
        except (urllib.error.URLError, OSError) as error:
            raise FileNotFoundError(
                f"published ELMo {name!r}: {dest.name} is not cached and could not be downloaded "
                f"({error}). Download {entry.url} on a machine that is online and place it at "
                f"{dest}, or pass the files yourself: --elmo OPTIONS.json WEIGHTS.hdf5"
            ) from None
        if not pin.exists():
            write_text(pin, digest + "\n")  # atomic: a cut pin would block later downloads
        paths.append(path)
    return paths[0], paths[1]


#: The shipped small English biLM (biLM + softmax + vocabulary), trained by ``nox -s
#: pretrain_small`` on public-domain text; its model card is ``bilm/data/MODEL_CARD.md``.
DEFAULT_MODEL_NAME = "elmo-bench-small-en.safetensors"


def default_checkpoint_path() -> Path:
    """Path of the shipped default model (inside the installed package).

    Raises:
        FileNotFoundError: the package was built without it.
    """
    path = Path(__file__).resolve().parent / "data" / DEFAULT_MODEL_NAME
    if not path.is_file():
        raise FileNotFoundError(f"the shipped default model is missing ({path})")
    return path
