"""The optimised BiLM (state="reset") equals the straightforward reference in benchmarks/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.reference_bilm import reference_layers
from bilm import (
    BiLM,
    BiLMOptions,
    batch_to_ids,
    export_official,
    init_weights,
    load_official,
)
from tests.bilm.helpers import tiny_options
from tests.conftest import shared_path

h5py = pytest.importorskip("h5py")

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    [],
    ["Hello", "world"],
    ["A", "much", "longer", "sentence", ",", "with", "more", "tokens", "than", "the", "rest", "!"],
    ["naïve", "café", "x" * 60, "The", "cat"],  # multi-byte chars, a token cut to 48 bytes
    ["."],
]


def _options(**kwargs: object) -> BiLMOptions:
    """The shared tiny options, at this test's default sizes (dim 32, filters 4/8/8)."""
    defaults: dict[str, object] = {"dim": 32, "filters": ((1, 4), (2, 8), (3, 8))}
    return tiny_options(**{**defaults, **kwargs})  # type: ignore[arg-type]


def _compare(
    options_path: Path | str, weights_path: Path | str, sentences: list[list[str]]
) -> float:
    """Max abs difference BiLM (reset) vs reference; also checks shapes, mask and zero padding."""
    model = load_official(options_path, weights_path, state="reset")
    with torch.no_grad():
        out = model(batch_to_ids(sentences))
    layers, mask = reference_layers(options_path, weights_path, sentences)
    assert out.layers.shape == layers.shape
    np.testing.assert_array_equal(out.mask.numpy(), mask)
    assert not out.layers.numpy()[:, ~mask].any()  # exactly 0 at padding
    return float(np.abs(out.layers.double().numpy() - layers).max())


CONFIGS = {
    "default": {},
    "tanh_no_skip_no_highway_1_layer": {
        "skip": False, "activation": "tanh", "n_highway": 0, "n_layers": 1,
    },
    "no_char_projection": {"filters": ((1, 4), (2, 4)), "n_highway": 2},  # F == P
    "no_lstm_projection": {"dim": 8, "projection_dim": 8, "n_layers": 3},  # P == C
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_tiny_random_model_matches_reference(tmp_path: Path, name: str) -> None:
    model = BiLM(_options(**CONFIGS[name]))  # type: ignore[arg-type]
    init_weights(model, seed=0)
    options_path, weights_path = export_official(model, tmp_path)
    assert _compare(options_path, weights_path, SENTENCES) <= 1e-5


def test_reference_rows_are_independent(tmp_path: Path) -> None:
    """Reset semantics in the reference itself: a sentence's vectors do not depend on its batch."""
    model = BiLM(_options())
    init_weights(model, seed=1)
    options_path, weights_path = export_official(model, tmp_path)
    batch, _ = reference_layers(options_path, weights_path, SENTENCES)
    for b, sentence in enumerate(SENTENCES):
        alone, _ = reference_layers(options_path, weights_path, [sentence])
        np.testing.assert_allclose(batch[:, b, : len(sentence)], alone[:, 0], atol=1e-12)


def test_all_empty_batch(tmp_path: Path) -> None:
    model = BiLM(_options())
    init_weights(model, seed=0)
    options_path, weights_path = export_official(model, tmp_path)
    layers, mask = reference_layers(options_path, weights_path, [[], []])
    assert layers.shape == (3, 2, 0, 16) and mask.shape == (2, 0)


@pytest.mark.shared
def test_fixture_batch0_matches_reference_and_tensorflow() -> None:
    """Fixture model, batch 0 (zero state = the official protocol's first batch)."""
    options_path = shared_path("fixtures", "elmo", "options.json")
    weights_path = shared_path("fixtures", "elmo", "lm_weights.hdf5")
    groups = json.loads(shared_path("fixtures", "elmo", "sentences.json").read_text())
    sentences = [groups[k][0].split() for k in range(3)]
    assert _compare(options_path, weights_path, sentences) <= 1e-5

    # The reference alone against the TensorFlow outputs (the tolerance of allennlp v2.10.1's
    # ``tests/modules/elmo_test.py``).
    layers, _ = reference_layers(options_path, weights_path, sentences)
    for k, sentence in enumerate(sentences):
        with h5py.File(shared_path("fixtures", "elmo", f"lm_embeddings_{k}.hdf5"), "r") as f:
            expected = f["0"][...]  # (2, n_tokens, 16): forward, backward
        expected = np.concatenate([expected[0], expected[1]], axis=-1)
        np.testing.assert_allclose(layers[-1, k, : len(sentence)], expected, atol=1e-6, rtol=1e-5)
