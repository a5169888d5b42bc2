"""Unpacking a task's committed DEMO set into the cache (one function for every task).

Each task commits its generated demo files (gzip-compressed) beside its generator; on first use
they are unpacked into ``<cache>/<task>-demo-<content hash>``, so a changed demo set never reuses
stale files and a clone without ``../shared`` runs every target. Every use checks the unpacked
copy against the committed files (a few MB, milliseconds) and rewrites any file that differs,
with a warning naming it: an edited or damaged cache never feeds a run.

A task's ``demo.py`` keeps its generator and declares the rest: a :class:`DemoSet` (its committed
files; ``content_hash`` and ``ensure_demo`` are its methods) and a :class:`DemoCommand` (its
``python -m tasks.<task>.demo`` command; ``main`` is its method).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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


def gzipped(names: Iterable[str]) -> dict[str, str]:
    """``{name: name + ".gz"}``: the unpacked file → committed file map of gzipped ``names``."""
    return {name: f"{name}.gz" for name in names}


@dataclass(frozen=True)
class DemoSet:
    """A task's committed DEMO set (its ``demo.py`` binds ``content_hash = DEMO.content_hash``
    and ``ensure_demo = DEMO.ensure``).

    Attributes:
        task: the task's name, the unpacked folder's prefix (``<task>-demo-<hash>``).
        data_dir: the committed files' folder.
        committed: unpacked file (relative, may contain folders) → committed file name, in the
            order that names the set (:func:`content_hash`); ``.gz`` files are decompressed.
        texts: unpacked file → text written as is (e.g. a DEMO notice).
    """

    task: str
    data_dir: Path
    committed: Mapping[str, str]
    texts: Mapping[str, str] = field(default_factory=dict)

    def content_hash(self, data_dir: str | Path | None = None) -> str:
        """First 12 hex digits of the SHA-256 of the committed files (in ``data_dir``, by
        default :attr:`data_dir`): the unpacked folder's suffix."""
        return content_hash(
            self.data_dir if data_dir is None else data_dir, self.committed.values()
        )

    def ensure(self, cache: str | Path | None = None, data_dir: str | Path | None = None) -> Path:
        """The folder holding the unpacked set (:func:`unpack_demo` into
        ``<cache>/<task>-demo-<content hash>``), unpacked on first use, verified on every use."""
        data_dir = self.data_dir if data_dir is None else data_dir
        return unpack_demo(self.task, data_dir, self.committed, self.texts or None, cache)


@dataclass(frozen=True)
class DemoCommand:
    """A task's ``python -m tasks.<task>.demo`` command (its ``demo.py`` binds
    ``main = COMMAND.main``): ``--corpus``, ``--out``, ``--seed`` and one size option per split;
    writes the generated set and prints each file written.

    Attributes:
        task: the task's name (the command's ``prog``).
        description: the command's help text.
        sizes: split → default size (one ``--<split>`` option each, in this order).
        unit: what a size counts (``"sentences"``), for the options' help.
        write: ``(corpus, out, seed, sizes) -> written paths`` (``seed`` is 0 without ``--seed``).
        note: what each written file is, printed after its path (``"DEMO data, not SST"``).
        seed: whether the generator takes a ``--seed``.
        minimum: the smallest size accepted.
    """

    task: str
    description: str
    sizes: Mapping[str, int]
    unit: str
    write: Callable[[str, str, int, dict[str, int]], Iterable[Path]]
    note: str
    seed: bool = True
    minimum: int = 0

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Command-line entry point; returns the exit status (a ``ValueError`` of the
        generator, e.g. too small a corpus, is a usage error)."""
        parser = argparse.ArgumentParser(
            prog=f"python -m tasks.{self.task}.demo", description=self.description
        )
        parser.add_argument("--corpus", required=True, help="corpus folder (with train.txt)")
        parser.add_argument("--out", required=True, help="output folder")
        if self.seed:
            parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
        for split, default in self.sizes.items():
            parser.add_argument(
                f"--{split}", type=int, default=default, help=f"{split} {self.unit} ({default})"
            )
        args = parser.parse_args(argv)
        sizes = {split: getattr(args, split) for split in self.sizes}
        if any(n < self.minimum for n in sizes.values()):
            options = [f"--{split}" for split in self.sizes]
            named = " and ".join(
                [", ".join(options[:-1]), options[-1]] if options[:-1] else options
            )
            parser.error(f"{named} must be >= {self.minimum}")
        try:
            paths = list(self.write(args.corpus, args.out, args.seed if self.seed else 0, sizes))
        except ValueError as exc:
            parser.error(str(exc))
        for path in paths:
            print(f"wrote {path} ({self.note})")
        return 0
