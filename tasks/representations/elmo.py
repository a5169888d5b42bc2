"""``elmo``: a frozen :class:`bilm.BiLM`'s L + 1 layers, from official files or a checkpoint.

Also the shared pieces of the biLM entries (``elmo`` and ``bilm-random``, :mod:`.random_bilm`):
:class:`ElmoRepresentation`, the state-policy check, the shipped default model, and the
``--elmo`` flag that names a biLM's files (:data:`ELMO_FLAG`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from torch import Tensor, nn

import bilm
from bilm.bilm import STATE_POLICIES, BiLM, StatePolicy
from bilm.elmo import run_bilm
from bilm.pretrained import PUBLISHED
from tasks.representations.adapt import ADAPT_OPTIONS
from tasks.representations.base import Layers, parts_digest, tensors_digest
from tasks.representations.options import ReprFlag, ReprOption

__all__ = [
    "DIRECTIONS",
    "DIRECTIONS_OPTION",
    "ELMO_FLAG",
    "ELMO_OPTIONS",
    "PUBLISHED_PREFIX",
    "ElmoRepresentation",
    "bilm_files",
    "build_elmo",
    "check_state",
    "default_checkpoint",
]

#: Which halves of the biLM's layers a representation returns.
DIRECTIONS = ("both", "forward", "backward")
#: How ``--elmo`` names a published model: ``published:NAME``.
PUBLISHED_PREFIX = "published:"


def bilm_files(values: Sequence[str]) -> dict[str, str]:
    """``--elmo``'s values → the keys they give: ``OPTIONS.json WEIGHTS.hdf5`` → ``options``,
    ``weights``; ``published:NAME`` → ``published``; ``CHECKPOINT`` → ``checkpoint``.

    Raises:
        ValueError: no value, or more than two.
    """
    if not 1 <= len(values) <= 2:
        raise ValueError("--elmo takes OPTIONS.json WEIGHTS.hdf5, CHECKPOINT or published:NAME")
    if len(values) == 2:
        return {"options": values[0], "weights": values[1]}
    if values[0].startswith(PUBLISHED_PREFIX):
        return {"published": values[0].removeprefix(PUBLISHED_PREFIX)}
    return {"checkpoint": values[0]}


#: ``--elmo``: the biLM of ``elmo`` (and the architecture of ``bilm-random``).
ELMO_FLAG = ReprFlag(
    "--elmo",
    "FILE",
    "the biLM: OPTIONS.json WEIGHTS.hdf5 (official files), a project CHECKPOINT, or "
    "published:NAME (e.g. published:original, downloaded when online). Default: the shipped "
    "small biLM for mini, published:original for paper",
    many=True,
    parse=bilm_files,
)
#: ``directions``, an option of both biLM entries.
DIRECTIONS_OPTION = ReprOption(
    "directions",
    "each layer's forward or backward half alone, or both (ELMo)",
    choices=DIRECTIONS,
    default="both",
)
#: The keys of ``elmo``'s configuration: :func:`build_elmo`'s (but ``state``, the run's, and
#: ``trainable``, ``adapt``'s), ``finetune`` (read by the harness) and the adaptation keys.
ELMO_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption(
        "checkpoint",
        "a project checkpoint (default: the shipped small biLM)",
        types=(Path,),
        flag=ELMO_FLAG,
    ),
    ReprOption("options", "official options.json, with weights", types=(Path,), flag=ELMO_FLAG),
    ReprOption("weights", "official *_weights.hdf5, with options", types=(Path,), flag=ELMO_FLAG),
    ReprOption(
        "published",
        "a published biLM by name, downloaded when online",
        choices=tuple(PUBLISHED),
        flag=ELMO_FLAG,
        presets=(("paper", "original"),),  # the paper's own biLM
    ),
    DIRECTIONS_OPTION,
    ReprOption(
        "finetune",
        "first fine-tune the biLM as a language model on the task's training text for this "
        "many epochs (true: 1; 0: never), then use it (paper §3.4; --finetune-bilm)",
        types=(float, bool),
    ),
    *ADAPT_OPTIONS,
)


class ElmoRepresentation(nn.Module):
    """A biLM's L + 1 layers (token layer ``[x; x]``, each biLSTM layer ``[fwd; bwd]``).

    With ``directions="forward"`` (``"backward"``) every layer is its forward (backward) half
    alone, ``P`` wide: the token layer ``x`` and each biLSTM layer's forward (backward) LM
    output; the mix then reads one direction. ``"both"`` (default) is ELMo.

    Args:
        model: a loaded :class:`bilm.BiLM` (its state policy is kept).
        name: registry name (``"elmo"`` or ``"bilm-random"``).
        trainable: let gradients reach the biLM (fine-tuning); default frozen, as in the paper.
        directions: ``"both"``, ``"forward"`` or ``"backward"``.
    """

    context_free_layers: int = 1  # layer 0 is the char CNN of the token alone (feature cache)
    #: LoRA's default place in the biLM (:mod:`tasks.representations.adapt`): its LSTMs'
    #: input, recurrent and projection matrices, wrapped as parameters (no ``nn.Linear`` here).
    lora_defaults = {"kind": "parameters", "rank": 2, "targets": ("w_input", "w_state", "w_proj")}

    def __init__(
        self,
        model: BiLM,
        name: str = "elmo",
        trainable: bool = False,
        directions: str = "both",
    ) -> None:
        super().__init__()
        if directions not in DIRECTIONS:
            raise ValueError(f"directions must be one of {DIRECTIONS}, got {directions!r}")
        self.bilm = model
        self.name = name
        self.trainable = trainable
        self.adaptation = "finetune" if trainable else "frozen"
        self.directions = directions
        half = model.output_dim // 2
        self._columns = {
            "both": slice(None),
            "forward": slice(0, half),
            "backward": slice(half, None),
        }[directions]
        self.output_dim = model.output_dim if directions == "both" else half
        self.num_layers = model.num_layers
        for p in model.parameters():
            p.requires_grad_(trainable)
        if not trainable:
            self.eval()

    @property
    def adapt_module(self) -> BiLM:
        """The biLM, which ``finetune`` and ``lora`` train (:mod:`tasks.representations.adapt`)."""
        return self.bilm

    def train(self, mode: bool = True) -> ElmoRepresentation:
        """Training mode only while something of the biLM trains (a frozen one stays in eval)."""
        return super().train(mode and self.trainable)

    @property
    def state_policy(self) -> StatePolicy:
        """The biLM's LSTM state policy (``reset``, ``warm`` or ``carry``)."""
        return self.bilm.state

    def carried_state(self) -> dict[str, Tensor]:
        """The biLM's carried LSTM state (:meth:`bilm.BiLM.carried_state`)."""
        return self.bilm.carried_state()

    def load_carried_state(self, state: Mapping[str, Tensor]) -> None:
        """Continue the biLM from a carried state (:meth:`bilm.BiLM.load_carried_state`)."""
        self.bilm.load_carried_state(state)

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``{"char_ids": (batch, time, max_chars)}`` (CPU, from :func:`bilm.batch_to_ids`)."""
        max_chars = self.bilm.options.char_cnn.max_characters_per_token
        return {"char_ids": bilm.batch_to_ids(sentences, max_chars)}

    def forward(self, features: Mapping[str, Tensor]) -> Layers:
        """Run the biLM; ``Layers.tensors`` is ``(L + 1, batch, time, 2P)``."""
        device = self.bilm.char_cnn.char_embedding.weight.device
        char_ids = features["char_ids"].to(device)  # (batch, time, max_chars)
        out = run_bilm(self.bilm, char_ids, trainable=self.trainable)
        layers = out.layers[..., self._columns]  # (L+1, batch, time, 2P or P)
        return Layers(layers, out.mask)  # (batch, time) mask

    def fingerprint(self) -> str:
        """SHA-256 of options, state policy and every weight (about 0.3 s for the full ELMo)."""
        options = json.dumps(self.bilm.options.to_dict(), sort_keys=True)
        view = [] if self.directions == "both" else [f"directions={self.directions}"]
        weights = tensors_digest(self.bilm.state_dict())  # adapters included when wrapped
        return parts_digest(["elmo/1", options, self.bilm.state, weights, *view])


def check_state(state: str) -> StatePolicy:
    """``state`` as a :data:`bilm.StatePolicy`; ValueError naming bilm's valid policies."""
    if state not in STATE_POLICIES:
        raise ValueError(f"state must be one of {STATE_POLICIES}, got {state!r}")
    return state  # type: ignore[return-value]


def default_checkpoint(what: str) -> Path:
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
    published: str | None = None,
    state: StatePolicy = "reset",
    trainable: bool = False,
    directions: str = "both",
) -> ElmoRepresentation:
    """ELMo from official files, a published model by name, or a project checkpoint.

    Args:
        checkpoint: a project checkpoint (:func:`bilm.save_checkpoint`); default: the shipped
            small model when neither this nor ``options``/``weights`` is given.
        options: official ``options.json`` (together with ``weights``).
        weights: official ``*_weights.hdf5`` (together with ``options``).
        published: a published model's name (:data:`bilm.pretrained.PUBLISHED`, e.g.
            ``"original"``, the paper's biLM): taken from the cache, downloaded when online
            (:func:`bilm.pretrained.published_files`, digests pinned); offline, the error names
            the URL and the path to place the file at.
        state: LSTM state policy; ``"reset"`` (default) makes vectors batch- and order-independent.
        trainable: fine-tune the biLM (default frozen).
        directions: ``"both"`` (ELMo), ``"forward"`` or ``"backward"``: the layers' forward or
            backward halves alone (:class:`ElmoRepresentation`).

    Raises:
        ValueError: inconsistent arguments.
        FileNotFoundError: no file given and no shipped default model.
    """
    policy = check_state(state)
    if (options is None) != (weights is None):
        raise ValueError("elmo: give options and weights together (official files)")
    if sum(x is not None for x in (checkpoint, options, published)) > 1:
        raise ValueError("elmo: give one of checkpoint, options+weights or published")
    if published is not None:
        from bilm.pretrained import published_files

        options, weights = published_files(published)
    if options is not None and weights is not None:
        model = bilm.load_official(options, weights, state=policy)
    else:
        model = bilm.load_checkpoint(checkpoint or default_checkpoint("elmo"), state=policy)
    return ElmoRepresentation(model, name="elmo", trainable=trainable, directions=directions)
