"""``bilm-random``: ELMo's architecture with random weights (the control the paper lacks)."""

from __future__ import annotations

import json
from pathlib import Path

import bilm
from bilm.bilm import BiLM, StatePolicy
from bilm.options import BiLMOptions
from tasks.representations.elmo import ElmoRepresentation, _check_state, _default_checkpoint

__all__ = ["build_bilm_random"]


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
    return ElmoRepresentation(
        model.eval(), name="bilm-random", trainable=False, directions=directions
    )
