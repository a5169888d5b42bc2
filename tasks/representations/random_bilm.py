"""``bilm-random``: ELMo's architecture with random weights (the control the paper lacks)."""

from __future__ import annotations

import json
from pathlib import Path

import bilm
from bilm.bilm import StatePolicy
from bilm.options import BiLMOptions
from tasks.representations.adapt import ADAPT_OPTIONS
from tasks.representations.elmo import (
    DIRECTIONS_OPTION,
    ELMO_FLAG,
    ElmoRepresentation,
    check_state,
    default_checkpoint,
)
from tasks.representations.options import ReprOption

__all__ = ["BILM_RANDOM_OPTIONS", "build_bilm_random"]

#: The keys of ``bilm-random``'s configuration: :func:`build_bilm_random`'s (but ``state``, the
#: run's) and the adaptation keys. ``--elmo`` gives its architecture (weights ignored).
BILM_RANDOM_OPTIONS: tuple[ReprOption, ...] = (
    ReprOption(
        "options", "official options.json giving the architecture", types=(Path,), flag=ELMO_FLAG
    ),
    ReprOption(
        "checkpoint",
        "take the architecture from this checkpoint (default: the shipped small biLM's)",
        types=(Path,),
        flag=ELMO_FLAG,
    ),
    ReprOption("seed", "initialisation seed (same seed, same weights)", types=(int,), default=0),
    DIRECTIONS_OPTION,
    *ADAPT_OPTIONS,
)


def build_bilm_random(
    options: str | Path | None = None,
    checkpoint: str | Path | None = None,
    seed: int = 0,
    state: StatePolicy = "reset",
    directions: str = "both",
) -> ElmoRepresentation:
    """A biLM with ELMo's architecture and random weights (:func:`bilm.init_weights`).

    Args:
        options: an ``options.json`` giving the architecture; or
        checkpoint: take the architecture from this checkpoint's metadata (weights ignored);
            default: the shipped small model's architecture.
        seed: initialisation seed (same seed, same weights, same fingerprint).
        state: LSTM state policy.
        directions: ``"both"``, ``"forward"`` or ``"backward"`` (:class:`ElmoRepresentation`).
    """
    policy = check_state(state)
    if options is not None and checkpoint is not None:
        raise ValueError("bilm-random: give options or checkpoint, not both")
    from bilm.weights import build_bilm, read_checkpoint_metadata

    if options is not None:
        opts, source = BiLMOptions.from_json(options), str(options)
    else:
        path = checkpoint or default_checkpoint("bilm-random")
        meta = read_checkpoint_metadata(path)
        if "options" not in meta:
            raise bilm.WeightsError(f"{path}: checkpoint has no 'options' metadata")
        source = f"{path} (metadata)"
        opts = BiLMOptions.from_dict(json.loads(meta["options"]), source=source)
    model = bilm.init_weights(build_bilm(opts, state=policy, source=source), seed=seed)
    return ElmoRepresentation(
        model.eval(), name="bilm-random", trainable=False, directions=directions
    )
