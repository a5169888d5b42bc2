"""``hdf5``: precomputed layers from any system, in the ``python -m bilm embed`` layout.

The file holds what :func:`bilm.embed.embed_file` writes (the layout of the old ``allennlp elmo
--all`` command, docs/bilm.md "Embedding a file"): one float dataset per sentence, keyed by its line
index (``"0"``, ``"1"``, …), of shape ``(num_layers, n_tokens, dim)`` (``(n_tokens, dim)``, as
``--layers average|top`` write, is read as one layer), and ``sentence_to_index``: a one-element
string dataset holding the JSON object ``{sentence: key}``, the sentence being its tokens joined by
single spaces.

A task's token sequence is matched to its dataset by that text. A sequence that is not in the
index, or whose dataset holds another number of tokens, is an error naming the sentence and the
file (never a silent zero vector or shift). An empty sequence needs no entry (it has no vectors).
``num_layers`` and ``output_dim`` come from the file; the fingerprint is a SHA-256 of the file's
whole content (memoised per process by the file's status, change time included), so a replaced file
with the same size and time stamp still gets a new feature-cache entry and run identity.

h5py is imported only when a file is opened.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from bilm.bilm import StatePolicy
from tasks.representations.adapt import FROZEN_ONLY
from tasks.representations.base import Layers, lengths_mask, parts_digest
from tasks.representations.options import ReprOption

__all__ = [
    "HDF5_OPTIONS",
    "SENTENCE_INDEX",
    "Hdf5FeaturesError",
    "Hdf5Representation",
    "build_hdf5",
]

#: The dataset mapping sentence text to dataset key (``bilm.embed.SENTENCE_INDEX_KEY``).
SENTENCE_INDEX = "sentence_to_index"
#: Bytes read at a time while hashing the file.
_CHUNK = 1 << 22
#: ``(resolved path, inode, size, mtime_ns, ctime_ns)`` → content digest: a file is hashed once
#: per process, again after any write (the change time moves even when the mtime is reset).
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}
#: Characters of a sentence shown in an error message.
_SHOWN = 160


class Hdf5FeaturesError(ValueError):
    """The file cannot serve a sentence (not in its index, other token count, bad layout)."""


def _h5py() -> Any:
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py is a core dependency
        raise ImportError("the hdf5 representation needs h5py: pip install h5py") from None
    return h5py


def _file_digest(path: Path) -> str:
    """SHA-256 of a file's whole content, read in chunks; memoised by its status (``_DIGESTS``)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(_CHUNK), b""):
                h.update(chunk)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _shown(text: str) -> str:
    """A sentence for an error message (long ones cut)."""
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


class Hdf5Representation(nn.Module):
    """Layers read from an HDF5 file of precomputed features (module doc).

    Args:
        path: the file (``python -m bilm embed`` or ``allennlp elmo --all`` layout).
        name: registry name.

    Attributes:
        path: the file.
        num_layers: layers per token, from the file (1 for 2-D datasets).
        output_dim: width of every layer, from the file.

    Raises:
        FileNotFoundError: no such file.
        Hdf5FeaturesError: no ``sentence_to_index``, no sentence dataset, or an index naming a
            dataset the file lacks.
    """

    trainable = False
    state_policy: StatePolicy = "reset"  # fixed vectors: nothing depends on call order
    context_free_layers = 0  # claims nothing about the stored layers

    def __init__(self, path: str | os.PathLike[str], name: str = "hdf5") -> None:
        super().__init__()
        self.name = name
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise FileNotFoundError(f"hdf5: no such file {self.path}")
        self._handle: Any = None
        self._pid = -1
        index = self._read_index()
        self._keys = sorted(set(index.values()), key=lambda k: (len(k), k))  # position → key
        where = {key: i for i, key in enumerate(self._keys)}
        self._position = {text: where[key] for text, key in index.items()}  # text → position
        self._texts = {where[key]: text for text, key in index.items()}  # position → text
        self.num_layers, self.output_dim = self._layout()
        self.register_buffer("anchor", torch.zeros(0), persistent=False)  # follows .to()
        self.eval()

    # ------------------------------------------------------------------ the file
    def _file(self) -> Any:
        """The open file (opened on first use, again in a forked process)."""
        if self._handle is None or self._pid != os.getpid():
            self._handle = _h5py().File(self.path, "r")
            self._pid = os.getpid()
        return self._handle

    def _read_index(self) -> dict[str, str]:
        """``sentence_to_index``: sentence text → dataset key, each key checked to exist."""
        handle = self._file()
        if SENTENCE_INDEX not in handle:
            raise Hdf5FeaturesError(
                f"{self.path}: no {SENTENCE_INDEX!r} dataset; write the file with python -m "
                "bilm embed (without --forget-sentences) or allennlp elmo --all"
            )
        raw = handle[SENTENCE_INDEX][0]
        index = json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw)
        if not isinstance(index, dict):
            raise Hdf5FeaturesError(f"{self.path}: {SENTENCE_INDEX!r} is not a JSON object")
        missing = sorted({str(k) for k in index.values()} - set(handle.keys()))
        if missing:
            raise Hdf5FeaturesError(
                f"{self.path}: {SENTENCE_INDEX!r} names datasets the file lacks: {missing[:5]}"
            )
        return {str(text): str(key) for text, key in index.items()}

    def _layout(self) -> tuple[int, int]:
        """``(num_layers, dim)`` of the first indexed dataset."""
        if not self._keys:
            raise Hdf5FeaturesError(f"{self.path}: {SENTENCE_INDEX!r} lists no sentence")
        shape = tuple(self._file()[self._keys[0]].shape)
        if len(shape) not in (2, 3):
            raise Hdf5FeaturesError(
                f"{self.path}: dataset {self._keys[0]!r} has shape {shape}; expected "
                "(num_layers, tokens, dim) or (tokens, dim)"
            )
        return (1 if len(shape) == 2 else shape[0]), shape[-1]

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the open file (a copy opens its own)."""
        state = self.__dict__.copy()
        state["_handle"], state["_pid"] = None, -1
        return state

    # ------------------------------------------------------------------ the protocol
    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"entries": (batch,) long, "mask": (batch, time) bool}``; entry -1: empty sentence.

        Raises:
            Hdf5FeaturesError: a sentence is not in the file's index (named, with the file).
        """
        mask = lengths_mask(sentences)  # (batch, time)
        entries = torch.full((len(sentences),), -1, dtype=torch.long)  # (batch,)
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                raise TypeError(f"sentence {i} is a string; pass a list of tokens")
            if not sentence:
                continue
            text = " ".join(sentence)
            position = self._position.get(text)
            if position is None:
                raise Hdf5FeaturesError(
                    f"{self.path}: sentence {_shown(text)} is not in its {SENTENCE_INDEX!r} "
                    f"({len(self._position)} sentences); embed the task's sentences "
                    "(docs/representations.md, 'Any system's features')"
                )
            entries[i] = position
        return {"entries": entries, "mask": mask}

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """Read each sentence's dataset; ``Layers.tensors`` is ``(num_layers, batch, time, dim)``.

        Raises:
            Hdf5FeaturesError: a dataset's token count or layout differs from the sentence's.
        """
        mask = features["mask"].cpu()  # (batch, time)
        entries = features["entries"].cpu().tolist()
        batch, time = mask.shape
        out = np.zeros((self.num_layers, batch, time, self.output_dim), np.float32)  # (L,B,T,D)
        lengths = mask.sum(dim=1).tolist()
        for row, (entry, n) in enumerate(zip(entries, lengths, strict=True)):
            if entry >= 0:
                out[:, row, :n] = self._read(entry, n)  # (L, n, D)
        anchor: Tensor = self.anchor  # type: ignore[assignment]
        device = anchor.device
        return Layers(torch.from_numpy(out).to(device), mask.to(device))

    def _read(self, entry: int, n: int) -> np.ndarray:
        """The ``(num_layers, n, dim)`` vectors of index position ``entry``, shape checked."""
        key = self._keys[entry]
        data = np.asarray(self._file()[key][()], dtype=np.float32)
        if data.ndim == 2:
            data = data[None]  # (1, tokens, dim)
        expected = (self.num_layers, n, self.output_dim)
        if data.shape != expected:
            stored = data.shape[1] if data.ndim == 3 else "?"
            raise Hdf5FeaturesError(
                f"{self.path}: sentence {_shown(self._texts[entry])} has {n} tokens but dataset "
                f"{key!r} holds {stored} (shape {tuple(data.shape)}, expected {expected}); were "
                "its tokens split differently (a token containing a space, or an empty one)?"
            )
        return data

    def fingerprint(self) -> str:
        """SHA-256 of the file's content (not its path or time stamp) and the entry's version."""
        return parts_digest(["hdf5/1", _file_digest(self.path)])


#: The keys of ``hdf5``'s configuration (:func:`build_hdf5`'s); it only runs frozen.
HDF5_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption(
        "path",
        "precomputed layers in the python -m bilm embed layout",
        types=(Path,),
        required=True,
    ),
    FROZEN_ONLY,
)


def build_hdf5(path: str | os.PathLike[str]) -> Hdf5Representation:
    """Precomputed layers from an HDF5 file (``--repr hdf5 --repr-set path=FILE.hdf5``).

    Args:
        path: a file in the ``python -m bilm embed`` / ``allennlp elmo --all`` layout.

    Raises:
        FileNotFoundError: no such file.
        Hdf5FeaturesError: the file has no ``sentence_to_index`` or no sentence dataset.
    """
    return Hdf5Representation(path)
