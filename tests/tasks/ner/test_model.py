"""The biLSTM-CRF tagger on a tiny configuration: shapes, masks, valid decoding, sites."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest
import torch

from tasks.common.spans import is_valid
from tasks.features.inject import Injector
from tasks.ner.config import NerConfig
from tasks.ner.model import CrfTagger, TaggerBatch
from tasks.nn.crf import allowed_transitions
from tasks.representations import Layers, build_representation

CONFIG = dataclasses.replace(
    NerConfig(), char_dim=4, char_filters=5, max_word_chars=6, hidden=(6, 3), dropout=0.3
)
LABELS = ["O", *(f"{p}-{t}" for t in ("PER", "LOC") for p in "BILU")]
VOCAB, WORD_DIM, N_CHARS = 12, 5, 9
LENGTHS = [6, 3, 1]


class FakeRepresentation:
    """A frozen representation of 2 layers of width 4 (the batch carries its layers)."""

    name, output_dim, num_layers, trainable = "fake", 4, 2, False

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        raise AssertionError("the model gets layers in the batch")

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        raise AssertionError("the model gets layers in the batch")

    def fingerprint(self) -> str:
        return "fake"


def _model(sites: frozenset[str] = frozenset()) -> CrfTagger:
    torch.manual_seed(0)
    rep = FakeRepresentation() if sites else build_representation("none")
    vectors = torch.randn(VOCAB, WORD_DIM)
    allowed = allowed_transitions(LABELS, "BIOUL")
    return CrfTagger(CONFIG, vectors, N_CHARS, allowed, Injector(rep, sites, dropout=0.0))  # type: ignore[arg-type]


def _batch(lengths: list[int], seed: int = 0, layers: bool = False) -> TaggerBatch:
    g = torch.Generator().manual_seed(seed)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    words = torch.randint(2, VOCAB, mask.shape, generator=g) * mask
    chars = torch.randint(1, N_CHARS, (*mask.shape, 4), generator=g) * mask[:, :, None]
    tags = torch.zeros_like(words)  # all O: valid
    tensors = torch.randn(2, *mask.shape, 4, generator=g) * mask[None, :, :, None]
    return TaggerBatch(
        words, chars, mask, tags, Layers(tensors, mask) if layers else Layers.empty(lengths)
    )


def _pad(batch: TaggerBatch, extra: int, g: torch.Generator) -> TaggerBatch:
    """``batch`` with ``extra`` more padded positions holding random ids (mask false)."""
    b, t = batch.words.shape
    mask = torch.cat([batch.mask, torch.zeros(b, extra, dtype=torch.bool)], 1)
    words = torch.cat([batch.words, torch.randint(1, VOCAB, (b, extra), generator=g)], 1)
    chars = torch.cat(
        [batch.chars, torch.randint(1, N_CHARS, (b, extra, batch.chars.shape[2]), generator=g)], 1
    )
    tags = torch.cat([batch.tags, torch.randint(0, len(LABELS), (b, extra), generator=g)], 1)  # type: ignore[list-item]
    layers = Layers(torch.zeros(0, *mask.shape, 0), mask)  # the baseline's: no layers
    if batch.layers.num_layers:
        noise = torch.randn(2, b, extra, 4, generator=g)
        layers = Layers(torch.cat([batch.layers.tensors, noise], 2), mask)
    return TaggerBatch(words, chars, mask, tags, layers)


@pytest.mark.parametrize(
    "sites",
    [frozenset(), frozenset({"input"}), frozenset({"output"}), frozenset({"input", "output"})],
)
def test_sites_build_run_and_padding_does_not_change_real_positions(sites: frozenset[str]) -> None:
    model = _model(sites).eval()
    batch = _batch(LENGTHS, layers=bool(sites))
    out = model(batch)
    assert out.emissions.shape == (3, max(LENGTHS), len(LABELS))
    assert out.loss is not None and out.loss.dim() == 0 and torch.isfinite(out.loss)
    assert out.paths is not None and [len(p) for p in out.paths] == LENGTHS
    padded = model(_pad(batch, 3, torch.Generator().manual_seed(1)))
    torch.testing.assert_close(
        padded.emissions[:, : max(LENGTHS)] * batch.mask[:, :, None],
        out.emissions * batch.mask[:, :, None],
    )
    torch.testing.assert_close(padded.loss, out.loss)
    assert padded.paths == out.paths
    extra = model.project.in_features - 2 * CONFIG.hidden[1]
    assert extra == (4 if "output" in sites else 0)
    lstm_in = model.lstm1.lstm.input_size - WORD_DIM - CONFIG.char_filters
    assert lstm_in == (4 if "input" in sites else 0)


def test_training_mode_gives_loss_and_gradients_without_decoding() -> None:
    model = _model(frozenset({"input"})).train()
    out = model(_batch(LENGTHS, layers=True))
    assert out.paths is None and out.loss is not None
    out.loss.backward()
    assert model.words.weight.grad is not None  # word vectors are fine-tuned (paper A.7)
    assert model.crf.transitions.grad is not None
    assert model.injector.mixes["input"].weights.grad is not None  # type: ignore[union-attr]


def test_decoded_sequences_are_valid_bioul_for_random_weights() -> None:
    for seed in range(5):
        torch.manual_seed(seed)
        model = _model()
        with torch.no_grad():
            model.project.bias.normal_(0, 5)
        out = model.eval()(_batch([8, 5, 2, 7], seed))
        assert out.paths is not None
        assert all(is_valid([LABELS[i] for i in p], "BIOUL") for p in out.paths)


@pytest.mark.parametrize("rule", ["project", "allennlp"])
def test_char_cnn_rule_for_short_and_long_words(rule: str) -> None:
    """``char_cnn=allennlp``: allennlp v2.10.1's max over the windows wholly inside the word, so
    a word of 1 or 2 characters (width 3) has no character features; ``project``: the windows
    that start on a character, a short word padded to the width (brute force for both)."""
    torch.manual_seed(0)
    config = dataclasses.replace(CONFIG, char_cnn=rule)
    allowed = allowed_transitions(LABELS, "BIOUL")
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    model = CrfTagger(config, torch.randn(VOCAB, WORD_DIM), N_CHARS, allowed, injector).eval()
    words = torch.tensor([[[2, 0, 0, 0], [2, 3, 0, 0], [2, 3, 4, 5]]])  # lengths 1, 2, 4
    with torch.no_grad():
        features = model.chars(words)[0]  # (3, filters)
        conv, width = model.chars.conv, model.chars.conv.kernel_size[0]
        for word, got in zip(words[0], features, strict=True):
            n = int((word != 0).sum())
            x = model.chars.embedding(torch.nn.functional.pad(word, (0, width)))  # (len+w, dim)
            starts = range(n - width + 1) if rule == "allennlp" else range(n)
            windows = [torch.relu(conv(x[k : k + width].T[None]))[0, :, 0] for k in starts]
            expected = torch.stack(windows).max(0).values if windows else torch.zeros_like(got)
            torch.testing.assert_close(got, expected)
    assert (features[:2].abs().sum(-1) == 0).all() == (rule == "allennlp")
