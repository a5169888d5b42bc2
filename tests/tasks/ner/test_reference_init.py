"""The tagger against allennlp's ``crf_tagger``: initialisation of word vectors a file
lacks, character embeddings, the dropout's masks, and the ``paper`` preset's settings."""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import pytest
import torch

from tasks.common.vocab import fill_missing_vectors
from tasks.features.inject import Injector
from tasks.ner.config import PRESETS, NerConfig
from tasks.ner.model import CrfTagger, make_dropout
from tasks.nn.crf import allowed_transitions
from tasks.representations import build_representation

LABELS = ["O", "B-NP", "I-NP", "L-NP", "U-NP"]
DropoutKind = Literal["variational", "elementwise"]


def _tagger(
    vectors: torch.Tensor, n_chars: int, dropout_kind: DropoutKind = "variational"
) -> CrfTagger:
    config = dataclasses.replace(
        NerConfig(),
        char_dim=16,
        char_filters=4,
        max_word_chars=5,
        hidden=(3, 3),
        dropout_kind=dropout_kind,
    )
    allowed = allowed_transitions(LABELS, "BIOUL")
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    return CrfTagger(config, vectors, n_chars, allowed, injector)


def _vectors_with_gaps(g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(vocab, 4) vectors: row 0 padding, row 1 unknown, found rows N(0.3, 2), every third word
    missing (zeros, as tasks.common.vocab.word_vectors leaves it); and the missing-row mask."""
    vocab, dim = 3_002, 4
    vectors = torch.randn(vocab, dim, generator=g) * 2.0 + 0.3
    missing = torch.zeros(vocab, dtype=torch.bool)
    missing[1] = True  # the unknown row
    missing[2::3] = True
    vectors[missing] = 0.0
    vectors[0] = 0.0  # padding
    return vectors, missing


def test_words_without_a_vector_start_from_the_found_vectors_statistics() -> None:
    """allennlp draws a vocabulary word its pre-trained file lacks from N(mean, std) of all the
    file's values for the vocabulary (``_read_embeddings_from_text_file``); it was 0 here."""
    vectors, missing = _vectors_with_gaps(torch.Generator().manual_seed(0))
    torch.manual_seed(1)
    weight = _tagger(vectors, n_chars=9).words.weight.detach()  # (vocab, 4)
    found = ~missing
    found[0] = False
    assert torch.equal(weight[found], vectors[found])  # pre-trained rows untouched
    assert torch.equal(weight[0], torch.zeros(4))  # padding stays 0
    drawn = weight[missing]  # (1001, 4)
    assert bool((drawn != 0).all())
    reference = vectors[found]
    mean, std = reference.mean().item(), reference.std(unbiased=False).item()
    assert drawn.mean().item() == pytest.approx(mean, abs=0.15)
    assert drawn.std().item() == pytest.approx(std, rel=0.05)
    assert torch.unique(drawn, dim=0).shape[0] == drawn.shape[0]  # distinct words stay distinct


def test_fill_missing_vectors_is_seeded_and_keeps_a_table_without_gaps() -> None:
    vectors, _ = _vectors_with_gaps(torch.Generator().manual_seed(0))
    torch.manual_seed(5)
    first = fill_missing_vectors(vectors)
    torch.manual_seed(5)
    assert torch.equal(first, fill_missing_vectors(vectors))
    full = torch.randn(6, 3)
    full[0] = 0.0
    assert torch.equal(fill_missing_vectors(full), full)
    assert torch.equal(fill_missing_vectors(torch.zeros(4, 3)), torch.zeros(4, 3))


def test_character_embeddings_are_xavier_uniform_with_a_zero_padding_row() -> None:
    """allennlp's ``Embedding`` is Xavier-uniform (PyTorch's N(0, 1) before) and the CNN sees
    padded characters as 0."""
    n_chars, char_dim = 300, 16
    torch.manual_seed(0)
    weight = _tagger(torch.randn(5, 4), n_chars).chars.embedding.weight.detach()
    bound = math.sqrt(6.0 / (n_chars + char_dim))
    assert torch.equal(weight[0], torch.zeros(char_dim))
    assert weight.abs().max().item() <= bound
    assert weight[1:].std().item() == pytest.approx(bound / math.sqrt(3.0), rel=0.05)


@pytest.mark.parametrize(("kind", "shared"), [("variational", True), ("elementwise", False)])
def test_dropout_kind_decides_whether_the_mask_is_shared_over_time(
    kind: DropoutKind, shared: bool
) -> None:
    torch.manual_seed(0)
    drop = make_dropout(kind, 0.5)
    drop.train()
    out = drop(torch.ones(4, 7, 32))  # (b, t, d)
    same_over_time = bool((out == out[:, :1]).all())
    assert same_over_time is shared
    assert set(out.unique().tolist()) <= {0.0, 2.0}
    drop.eval()
    assert torch.equal(drop(torch.ones(2, 3, 4)), torch.ones(2, 3, 4))
    with pytest.raises(ValueError, match="dropout_kind"):
        make_dropout("spatial", 0.5)  # type: ignore[arg-type]


def test_the_tagger_uses_the_configured_dropout_kind() -> None:
    names: tuple[DropoutKind, ...] = ("variational", "elementwise")
    kinds = {kind: type(_tagger(torch.randn(5, 4), 9, kind).drop).__name__ for kind in names}
    assert kinds == {"variational": "VariationalDropout", "elementwise": "Dropout"}


def test_paper_preset_trains_as_allennlps_crf_tagger() -> None:
    """allennlp ``ner.jsonnet``: a 2-layer biLSTM of 200 units, element-wise dropout 0.5, Adam
    1e-3, gradient norm 5, no value clipping, batches of 64 random instances every epoch
    (allennlp 0.5's ``basic`` iterator)."""
    paper, mini = PRESETS["paper"](), PRESETS["mini"]()
    assert paper.hidden == (200, 200)
    assert (paper.dropout, paper.dropout_kind) == (0.5, "elementwise")
    assert (paper.train.batch_size, paper.train.batching) == (64, "shuffled")
    assert paper.train.clip_norm == 5.0 and paper.train.clip_value is None
    assert not paper.include_start_end and paper.label_encoding == "BIOUL"
    # mini keeps its settings (only the initialisation, model code, changed under it)
    assert (mini.hidden, mini.dropout_kind, mini.train.bucket_noise) == ((64, 32), "variational", 0)
