"""Frozen-representation feature cache: compute every token's layers once per dataset.

A frozen biLM makes caching exact (TASKS_SPEC §1.2, §6; e2e-coref ``cache_elmo.py``, ``allennlp
elmo``): each run then only learns the scalar mixes and the task model. The cache is a folder::

    <root>/<name>-<repr fp[:16]>-<data fp[:16]>-<dtype>/
        layers.npy    (total_tokens, num_layers, dim)  float16 or float32, memory-mapped
        offsets.npy   (num_sequences + 1,) int64        sequence i: layers[offsets[i]:offsets[i+1]]
        meta.json     full fingerprints, shapes, dtype   written last

keyed by :meth:`Representation.fingerprint` and a SHA-256 of the token sequences, so a change in
either builds a new folder. It is written to a temporary sibling folder (``.tmp-*``, ignored) and
renamed in one step: a crash mid-build leaves no visible cache (delete stale ``.tmp-*`` folders at
will).

Sequences are run longest first to limit padding; that is exact only when a sentence's vectors do
not depend on its batch, so representations with ``state_policy == "carry"`` (and trainable ones)
are refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from tasks.representations import Layers, Representation

FORMAT = "elmo-bench-feature-cache/1"
_DTYPES = {"float16": np.float16, "float32": np.float32}


class CacheError(ValueError):
    """A representation cannot be cached, or a cache folder is unreadable."""


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


def check_cacheable(representation: Representation) -> None:
    """Raise :class:`CacheError` when the representation's vectors may change between calls."""
    policy = getattr(representation, "state_policy", None)
    if policy == "carry":
        raise CacheError(
            f"cannot cache {representation.name!r}: its LSTM state policy is 'carry', so vectors "
            "depend on earlier batches and on batch order; build it with state='reset' (or 'warm')"
        )
    if representation.trainable:
        raise CacheError(f"cannot cache {representation.name!r}: it is trainable (fine-tuned)")
    if representation.num_layers == 0 or representation.output_dim == 0:
        raise CacheError(f"nothing to cache: {representation.name!r} has no layers")


class FeatureCache:
    """A built cache folder, memory-mapped; open with :meth:`build` (or the constructor).

    Args:
        path: the cache folder (holding ``meta.json``).

    Raises:
        CacheError: not a complete cache folder.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        meta_path = self.path / "meta.json"
        if not meta_path.is_file():
            raise CacheError(f"{self.path}: not a feature cache (no meta.json)")
        self.meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
        if self.meta.get("format") != FORMAT:
            raise CacheError(f"{self.path}: format {self.meta.get('format')!r}, expected {FORMAT}")
        self.offsets: np.ndarray = np.load(self.path / "offsets.npy")  # (num_sequences + 1,)
        self.lengths: np.ndarray = np.diff(self.offsets)  # (num_sequences,)
        self.num_layers: int = int(self.meta["num_layers"])
        self.output_dim: int = int(self.meta["output_dim"])
        self.dtype: str = str(self.meta["dtype"])
        self.representation_fingerprint: str = str(self.meta["representation_fingerprint"])
        self.data_fingerprint: str = str(self.meta["data_fingerprint"])
        self.reused = False  # True when build() found it already there
        self._layers: np.ndarray | None = None

    # ------------------------------------------------------------------ building
    @staticmethod
    def folder_for(
        representation: Representation,
        sequences: Sequence[Sequence[str]],
        root: str | Path,
        dtype: str | torch.dtype = "float16",
    ) -> Path:
        """Where :meth:`build` puts (or finds) the cache of this representation and data."""
        return FeatureCache._folder(
            Path(root),
            representation.name,
            representation.fingerprint(),
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
    ) -> FeatureCache:
        """Return the cache for ``representation`` over ``sequences``, building it if needed.

        Args:
            representation: a frozen representation (not ``state_policy == "carry"``).
            sequences: the dataset's token sequences; cache index ``i`` is ``sequences[i]``.
            root: folder holding caches (created if needed).
            dtype: ``"float16"`` (half the disk; about 3 significant digits) or ``"float32"``.
            batch_size: sequences per representation call.
            progress: show a progress bar (stderr).

        Raises:
            CacheError: the representation cannot be cached.
            OverflowError: a value does not fit in float16 (use float32).
        """
        check_cacheable(representation)
        dtype_name = _dtype_name(dtype)
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        root = Path(root)
        rep_fp, data_fp = representation.fingerprint(), data_fingerprint(sequences)
        folder = cls._folder(root, representation.name, rep_fp, data_fp, dtype_name)
        if (folder / "meta.json").is_file():
            return cls._reuse(folder, rep_fp, data_fp)
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{folder.name}-", dir=root))
        try:
            cls._write(tmp, representation, sequences, dtype_name, batch_size, progress)
            meta = {
                "format": FORMAT,
                "name": representation.name,
                "representation_fingerprint": rep_fp,
                "data_fingerprint": data_fp,
                "num_layers": representation.num_layers,
                "output_dim": representation.output_dim,
                "dtype": dtype_name,
                "num_sequences": len(sequences),
            }
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
            try:
                os.rename(tmp, folder)  # atomic on one file system
            except OSError:
                if not (folder / "meta.json").is_file():
                    raise
                shutil.rmtree(tmp, ignore_errors=True)  # another process built it meanwhile
                return cls._reuse(folder, rep_fp, data_fp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls(folder)

    @classmethod
    def _reuse(cls, folder: Path, rep_fp: str, data_fp: str) -> FeatureCache:
        cache = cls(folder)
        if (cache.representation_fingerprint, cache.data_fingerprint) != (rep_fp, data_fp):
            raise CacheError(f"{folder}: fingerprint prefix collision; delete the folder")
        cache.reused = True
        return cache

    @staticmethod
    def _write(
        folder: Path,
        representation: Representation,
        sequences: Sequence[Sequence[str]],
        dtype_name: str,
        batch_size: int,
        progress: bool,
    ) -> None:
        np_dtype = _DTYPES[dtype_name]
        lengths = np.array([len(s) for s in sequences], dtype=np.int64)  # (num_sequences,)
        offsets = np.zeros(len(sequences) + 1, dtype=np.int64)  # (num_sequences + 1,)
        np.cumsum(lengths, out=offsets[1:])
        num_layers, dim = representation.num_layers, representation.output_dim
        layers = np.lib.format.open_memmap(
            folder / "layers.npy",
            mode="w+",
            dtype=np_dtype,
            shape=(int(offsets[-1]), num_layers, dim),
        )  # (total_tokens, num_layers, dim)
        order = sorted(range(len(sequences)), key=lambda i: -int(lengths[i]))  # longest first
        order = [i for i in order if lengths[i] > 0]
        with (
            torch.no_grad(),
            tqdm(total=int(offsets[-1]), unit="tok", disable=not progress, leave=False) as bar,
        ):
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                out = representation(representation.featurize([sequences[i] for i in rows]))
                expected = (num_layers, len(rows), int(lengths[rows[0]]), dim)
                if tuple(out.tensors.shape) != expected:
                    raise CacheError(
                        f"{representation.name!r} returned {tuple(out.tensors.shape)}, "
                        f"expected {expected}"
                    )
                values = out.tensors.detach().float().cpu().permute(1, 2, 0, 3).numpy()  # (B,T,L,D)
                for row, i in enumerate(rows):
                    with np.errstate(over="ignore"):  # reported below, with advice
                        chunk = values[row, : lengths[i]].astype(np_dtype)  # (len_i, L, D)
                    if not np.isfinite(chunk).all():
                        raise OverflowError(
                            f"sequence {i}: values overflow {dtype_name} (or are NaN); "
                            "use dtype='float32'"
                        )
                    layers[offsets[i] : offsets[i + 1]] = chunk
                bar.update(int(lengths[rows].sum()))
        layers.flush()
        del layers
        np.save(folder / "offsets.npy", offsets)

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def layers(self) -> np.ndarray:
        """The memory-mapped ``(total_tokens, num_layers, dim)`` array (read-only)."""
        if self._layers is None:
            self._layers = np.load(self.path / "layers.npy", mmap_mode="r")
            if self._layers.shape != (int(self.offsets[-1]), self.num_layers, self.output_dim):
                raise CacheError(f"{self.path}: layers.npy has shape {self._layers.shape}")
        return self._layers

    def lookup(self, indices: Sequence[int], device: torch.device | str | None = None) -> Layers:
        """Layers of the given sequences, right-padded with zeros, as float32.

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
        time = int(lengths.max()) if idx.size else 0
        out = np.zeros((len(idx), time, self.num_layers, self.output_dim), np.float32)  # (B,T,L,D)
        source = self.layers
        for row, i in enumerate(idx):
            out[row, : lengths[row]] = source[self.offsets[i] : self.offsets[i + 1]]
        tensors = torch.from_numpy(out).permute(2, 0, 1, 3).contiguous()  # (L, B, T, D)
        mask = torch.arange(time)[None, :] < torch.from_numpy(lengths)[:, None]  # (B, T)
        layers = Layers(tensors, mask)
        return layers.to(device) if device is not None else layers

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_layers"] = None  # workers re-open the memory map instead of pickling the data
        return state
