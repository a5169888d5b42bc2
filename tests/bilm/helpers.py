"""Tiny biLMs for fast tests."""

from __future__ import annotations

from bilm import BiLM, BiLMOptions, CharCNNOptions, LSTMOptions, init_weights
from bilm.bilm import StatePolicy


def tiny_options(
    n_highway: int = 1,
    skip: bool = True,
    n_layers: int = 2,
    dim: int = 24,
    projection_dim: int = 8,
    filters: tuple[tuple[int, int], ...] = ((1, 4), (2, 6), (3, 6)),
    activation: str = "relu",
) -> BiLMOptions:
    """A biLM small enough to run in milliseconds; every code path of the full model."""
    return BiLMOptions(
        lstm=LSTMOptions(
            dim=dim,
            projection_dim=projection_dim,
            n_layers=n_layers,
            cell_clip=3.0,
            proj_clip=3.0,
            use_skip_connections=skip,
        ),
        char_cnn=CharCNNOptions(
            embedding_dim=4,
            filters=filters,
            n_highway=n_highway,
            activation=activation,  # type: ignore[arg-type]
        ),
    )


def tiny_bilm(seed: int = 0, state: StatePolicy = "reset", **kwargs: object) -> BiLM:
    """A randomly initialised tiny biLM in eval mode."""
    model = BiLM(tiny_options(**kwargs), state=state)  # type: ignore[arg-type]
    init_weights(model, seed=seed)
    return model.eval()


SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Hello", "world"],
    [],
    ["A", "much", "longer", "sentence", "with", "more", "tokens", "than", "the", "others", "!"],
]
