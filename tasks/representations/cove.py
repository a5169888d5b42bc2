"""``cove``: McCann et al. (2017)'s MT-LSTM over 300-d GloVe (docs/representations.md).

The user supplies the original ``wmtlstm-8f474287.pth`` state dict and GloVe 840B.

**CoVe layers (neither paper says; decided here).** ``cove`` exposes exactly the two MT-LSTM
layers (600-d each), so ``num_layers == 2`` and the scalar mix weights the two biLSTM layers only.
The 300-d GloVe input is *not* a layer: it has a different width (a weighted sum would need a
projection or padding that neither paper describes), and task models already receive GloVe as their
word embedding, which reproduces McCann et al.'s ``[GloVe(w); CoVe(w)]`` input. ``mode="last"``
gives CoVe's published setting (the top layer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import torch
from torch import Tensor, nn

from bilm.bilm import StatePolicy
from tasks.nn.layers import run_rnn
from tasks.representations.adapt import FROZEN_ONLY
from tasks.representations.base import Layers, parts_digest, tensors_digest
from tasks.representations.glove import GLOVE_FLAG, GloveRepresentation, build_glove
from tasks.representations.options import ReprFlag, ReprOption

__all__ = [
    "COVE_FILE",
    "COVE_FLAG",
    "COVE_HIDDEN",
    "COVE_INPUT",
    "COVE_OPTIONS",
    "COVE_URL",
    "CoveError",
    "CoveRepresentation",
    "build_cove",
    "cove_expected_shapes",
    "load_cove_state",
    "validate_cove_state",
]

#: The original CoVe MT-LSTM file (salesforce/cove ``cove/encoder.py``, ``model_urls``).
COVE_FILE = "wmtlstm-8f474287.pth"
COVE_URL = "https://s3.amazonaws.com/research.metamind.io/cove/wmtlstm-8f474287.pth"
COVE_HIDDEN = 300  # source: McCann et al. (2017) §3, salesforce/cove encoder.py
COVE_INPUT = 300  # source: GloVe 840B 300-d (CommonCrawl, cased), salesforce/cove README


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
    state_policy: StatePolicy = "reset"
    context_free_layers = 0

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
            out0 = run_rnn(self.rnn0, packed)
            out1 = run_rnn(self.rnn1, out0)
            h0 = unpack(out0, batch_first=True, total_length=time)[0]  # (batch, time, 2H)
            h1 = unpack(out1, batch_first=True, total_length=time)[0]  # (batch, time, 2H)
            layers = torch.stack([h0, h1]) * mask[None, :, :, None]  # (2, batch, time, 2H)
        return Layers(layers, mask)

    def fingerprint(self) -> str:
        """Digest of the GloVe source and the MT-LSTM weights."""
        weights = {**{f"0.{k}": v for k, v in self.rnn0.state_dict().items()}}
        weights.update({f"1.{k}": v for k, v in self.rnn1.state_dict().items()})
        return parts_digest(["cove/1", self.glove.fingerprint(), tensors_digest(weights)])


#: ``--cove``: the MT-LSTM weights of ``cove``.
COVE_FLAG = ReprFlag("--cove", "WEIGHTS.pth", "CoVe MT-LSTM weights (wmtlstm-*.pth)")
#: The keys of ``cove``'s configuration (:func:`build_cove`'s); it only runs frozen.
COVE_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption(
        "weights",
        f"the MT-LSTM state dict: {COVE_URL}",
        types=(Path,),
        flag=COVE_FLAG,
        required=True,
    ),
    ReprOption(
        "glove_path",
        "glove.840B.300d.txt, its input vectors",
        types=(Path,),
        flag=GLOVE_FLAG,
        required=True,
    ),
    ReprOption("glove_vectors", ".npy GloVe matrix, with glove_vocab", types=(Path,)),
    ReprOption("glove_vocab", "vocabulary of glove_vectors", types=(Path,)),
    ReprOption(
        "lowercase", "look words up lowercased (840B is cased)", types=(bool,), default=False
    ),
    FROZEN_ONLY,
)


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
