"""ESIM on a tiny configuration: alignment and pooling against brute force, shapes,
injection sites, the extra ℓ2 and the initialisation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import pytest
import torch

from tasks.features.inject import Injector
from tasks.representations import Layers, build_representation
from tasks.snli.config import SnliConfig
from tasks.snli.model import ESIM, SnliBatch, pool, soft_align

CONFIG = dataclasses.replace(
    SnliConfig(), hidden=5, dropout=0.2, attention_dropout=0.2, output_dropout=0.2
)
VOCAB, WORD_DIM, N_LABELS = 13, 6, 3
P_LENGTHS, H_LENGTHS = [6, 3, 1], [2, 5, 4]


class FakeRepresentation:
    """A frozen representation of ``num_layers`` layers of width ``output_dim`` (never called)."""

    name, trainable = "fake", False

    def __init__(self, num_layers: int = 3, output_dim: int = 4) -> None:
        self.num_layers, self.output_dim = num_layers, output_dim

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        raise AssertionError("the model gets layers in the batch")

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        raise AssertionError("the model gets layers in the batch")

    def fingerprint(self) -> str:
        return "fake"


def _mask(lengths: list[int]) -> torch.Tensor:
    return torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]


def _model(sites: frozenset[str] = frozenset(), rep: FakeRepresentation | None = None) -> ESIM:
    torch.manual_seed(0)
    representation = (rep or FakeRepresentation()) if sites else build_representation("none")
    injector = Injector(representation, sites, dropout=0.0)
    g = torch.Generator().manual_seed(1)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=g)
    vectors[0] = 0.0
    return ESIM(CONFIG, vectors, N_LABELS, injector)


def _layers(lengths: list[int], rep: FakeRepresentation, g: torch.Generator) -> Layers:
    mask = _mask(lengths)
    tensors = torch.randn(rep.num_layers, *mask.shape, rep.output_dim, generator=g)
    return Layers(tensors * mask[None, :, :, None], mask)


def _batch(rep: FakeRepresentation | None = None, seed: int = 0) -> SnliBatch:
    g = torch.Generator().manual_seed(seed)
    pm, hm = _mask(P_LENGTHS), _mask(H_LENGTHS)
    pw = torch.randint(2, VOCAB, pm.shape, generator=g) * pm
    hw = torch.randint(2, VOCAB, hm.shape, generator=g) * hm
    labels = torch.randint(0, N_LABELS, (len(P_LENGTHS),), generator=g)
    return SnliBatch(
        pw,
        pm,
        hw,
        hm,
        labels,
        Layers.empty(P_LENGTHS) if rep is None else _layers(P_LENGTHS, rep, g),
        Layers.empty(H_LENGTHS) if rep is None else _layers(H_LENGTHS, rep, g),
    )


# ------------------------------------------------------------------------- alignment, pooling
@pytest.mark.parametrize("seed", range(3))
def test_soft_align_matches_brute_force(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(3, 6, 4, generator=g), torch.randn(3, 5, 4, generator=g)
    am, bm = _mask([6, 2, 4]), _mask([1, 5, 3])
    a_tilde, b_tilde = soft_align(a, b, am, bm)
    for k in range(3):
        for i in range(int(am[k].sum())):
            real = b[k, : int(bm[k].sum())]  # (tb, d)
            weights = torch.softmax(real @ a[k, i], dim=0)
            assert torch.allclose(a_tilde[k, i], weights @ real, atol=1e-6)
        for j in range(int(bm[k].sum())):
            real = a[k, : int(am[k].sum())]
            weights = torch.softmax(real @ b[k, j], dim=0)
            assert torch.allclose(b_tilde[k, j], weights @ real, atol=1e-6)


def test_pool_averages_and_maxes_real_positions_only() -> None:
    v = torch.tensor([[[1.0, -5.0], [3.0, -7.0], [100.0, 100.0]]])  # (1, 3, 2), last is padding
    out = pool(v, torch.tensor([[True, True, False]]))
    assert out.tolist() == [[2.0, -6.0, 3.0, -5.0]]


# ------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("sites", [(), ("input",), ("output",), ("input", "output")])
def test_shapes_at_every_site(sites: tuple[str, ...]) -> None:
    rep = FakeRepresentation() if sites else None
    model = _model(frozenset(sites), rep).eval()
    batch = _batch(rep)
    out = model(batch)
    assert out.logits.shape == (3, N_LABELS) and out.predictions.shape == (3,)
    assert out.loss is not None and out.loss.ndim == 0


@pytest.mark.parametrize("sites", [("input",), ("output",), ("input", "output")])
def test_sites_widths_and_gradients(sites: tuple[str, ...]) -> None:
    rep = FakeRepresentation(num_layers=2, output_dim=7)  # CoVe-like: 2 layers
    model = _model(frozenset(sites), rep).train()
    h = CONFIG.hidden
    assert model.encoder.lstm.input_size == WORD_DIM + (7 if "input" in sites else 0)
    enc_dim = 2 * h + (7 if "output" in sites else 0)
    assert model.projection.in_features == 4 * enc_dim
    out = model(_batch(rep))
    assert out.loss is not None
    out.loss.backward()
    for site in sites:  # the mix weights of every active site get a gradient
        mix = model.injector.mixes[site]
        assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in mix.parameters())
    assert model.words.weight.grad is None  # fixed word vectors


def test_no_labels_no_loss() -> None:
    batch = dataclasses.replace(_batch(), labels=None)
    out = _model().eval()(batch)
    assert out.loss is None and out.predictions.tolist() == out.logits.argmax(-1).tolist()


# ------------------------------------------------------------------------- loss and init
def test_extra_l2_over_weight_matrices_only() -> None:
    model = _model(frozenset({"input"}), FakeRepresentation()).eval()
    batch = _batch(FakeRepresentation())
    out = model(batch)
    assert out.loss is not None
    ce = torch.nn.functional.cross_entropy(out.logits, batch.labels)
    matrices = model.weight_matrices()
    assert len(matrices) == 4 * 2 + 3  # 2 biLSTMs × (ih, hh) × 2 directions + 3 linear
    assert all(w.ndim == 2 for w in matrices)
    names = {id(p): n for n, p in model.named_parameters()}
    assert not any("mixes" in names[id(w)] or "bias" in names[id(w)] for w in matrices)
    l2 = sum(float(w.detach().pow(2).sum()) for w in matrices)
    assert out.loss.item() == pytest.approx(ce.item() + CONFIG.weight_l2 * l2, rel=1e-6)
    plain = ESIM(
        dataclasses.replace(CONFIG, weight_l2=0.0), model.words.weight, N_LABELS, model.injector
    )
    plain.load_state_dict(model.state_dict())
    assert plain.eval()(batch).loss.item() == pytest.approx(ce.item(), rel=1e-6)


def test_initialisation() -> None:
    model = _model()
    h = CONFIG.hidden
    for name, param in model.encoder.lstm.named_parameters():
        if name.startswith("bias_ih"):
            assert param[h : 2 * h].eq(1).all() and param[:h].eq(0).all()  # forget gate 1
        if name.startswith("weight_hh"):  # orthogonal (4h, h): orthonormal columns
            assert torch.allclose(param.T @ param, torch.eye(h), atol=1e-5)
    assert model.logits.bias.eq(0).all()


def test_relu_or_tanh_hidden_layer() -> None:
    tanh = ESIM(
        dataclasses.replace(CONFIG, mlp_activation="tanh"),
        _model().words.weight,
        N_LABELS,
        Injector(build_representation("none"), frozenset()),
    )
    assert tanh.activation is torch.tanh and _model().activation is torch.nn.functional.relu
    with pytest.raises(ValueError, match="mlp_activation"):
        dataclasses.replace(CONFIG, mlp_activation="sigmoid")  # type: ignore[arg-type]


def test_runs_with_a_cove_shaped_representation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--repr cove``: the MT-LSTM's two 600-d layers at both sites (random weights of the
    original key layout and a 3-word 300-d GloVe file stand in for the real files)."""
    from tasks.representations import COVE_HIDDEN, build_cove, cove_expected_shapes
    from tasks.snli.data import SnliExample
    from tasks.snli.task import SnliRecipe

    g = torch.Generator().manual_seed(0)
    state = {k: 0.1 * torch.randn(s, generator=g) for k, s in cove_expected_shapes().items()}
    torch.save(state, tmp_path / "cove.pth")
    words = ("A", "dog", "runs")
    (tmp_path / "glove.txt").write_text(
        "".join(w + " " + " ".join(["0.1"] * 300) + "\n" for w in words), encoding="utf-8"
    )
    cove = build_cove(weights=tmp_path / "cove.pth", glove_path=tmp_path / "glove.txt")
    assert (cove.num_layers, cove.output_dim) == (2, 2 * COVE_HIDDEN)
    injector = Injector(cove, frozenset({"input", "output"}), dropout=0.0)
    pairs = [
        SnliExample("p1", "A dog runs.", "A dog.", "entailment", ("A", "dog", "runs"), ("A",)),
        SnliExample("p2", "Dogs.", "A cat runs.", "neutral", ("Dogs",), ("A", "cat", "runs")),
    ]
    recipe = SnliRecipe(CONFIG, {"train": pairs}, words={"a": 2, "dog": 3, "runs": 4})
    recipe.vectors = torch.randn(5, WORD_DIM, generator=g)
    model = recipe.build_model(injector)
    assert model.encoder.lstm.input_size == WORD_DIM + 600
    batch = recipe.collate(pairs, lambda seqs: cove(cove.featurize(seqs)))
    out = model(batch)
    assert out.logits.shape == (2, 3) and out.loss is not None and torch.isfinite(out.loss)


def test_allennlps_embedding_options() -> None:
    """``train_word_vectors`` updates the vectors (esim.jsonnet: trainable; default fixed, as
    the paper); ``fill_missing_words`` draws the rows without a vector from N(mean, std) of the
    found values (allennlp's embedding; default zeros); the padding row stays zero."""
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    vectors = torch.randn(VOCAB, WORD_DIM, generator=torch.Generator().manual_seed(1))
    vectors[0] = 0.0
    vectors[3] = 0.0  # a word without a pre-trained vector
    plain = ESIM(CONFIG, vectors, N_LABELS, injector)
    assert not plain.words.weight.requires_grad and not plain.words.weight[3].any()
    torch.manual_seed(0)
    config = dataclasses.replace(CONFIG, train_word_vectors=True, fill_missing_words=True)
    tuned = ESIM(config, vectors, N_LABELS, injector)
    assert tuned.words.weight.requires_grad
    assert tuned.words.weight[3].abs().sum() > 0 and not tuned.words.weight[0].any()
    assert torch.equal(tuned.words.weight[5], vectors[5])
