"""Lee et al. (2017)'s span-ranking model: spans, pruning, features, the loss against a brute-force
computation, padding invariance, sites, truncation and blockwise antecedent scoring."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import pytest
import torch

from tasks.coref.config import CorefConfig
from tasks.coref.model import (
    CorefBatch,
    SpanRankingCoref,
    candidate_spans,
    clusters_from_antecedents,
    distance_buckets,
    prune_spans,
)
from tasks.features.inject import Injector
from tasks.representations import Layers, build_representation

VOCAB, N_CHARS, N_GENRES = 30, 12, 8
CONFIG = CorefConfig(
    word_vectors="random:4",
    turian_vectors="",
    char_dim=3,
    char_filters=2,
    max_word_chars=6,
    hidden=4,
    ffnn_size=5,
    feature_size=3,
    max_span_width=3,
    max_antecedents=4,
    spans_per_word=0.4,
)
LENGTHS = [5, 3, 6]


class FakeRepresentation:
    """A frozen representation of 2 layers of width 3 (the batch carries its layers)."""

    name, output_dim, num_layers, trainable = "fake", 3, 2, False

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, torch.Tensor]:
        raise AssertionError("the model gets layers in the batch")

    def __call__(self, features: Mapping[str, torch.Tensor]) -> Layers:
        raise AssertionError("the model gets layers in the batch")

    def fingerprint(self) -> str:
        return "fake"

    def to(self, device: object) -> FakeRepresentation:
        return self


def _model(
    sites: frozenset[str] = frozenset(), config: CorefConfig = CONFIG, seed: int = 0
) -> SpanRankingCoref:
    torch.manual_seed(seed)
    rep = FakeRepresentation() if sites else build_representation("none")
    injector = Injector(rep, sites, dropout=0.0)
    tables = [torch.randn(VOCAB, 4), torch.randn(VOCAB, 2)]
    return SpanRankingCoref(config, tables, N_CHARS, N_GENRES, injector).eval()


def _batch(lengths: Sequence[int] = LENGTHS, seed: int = 0) -> CorefBatch:
    """A document: random words/chars, two speakers, gold clusters {(0,1),(6,6),(9,10)} and
    {(2,2),(12,12)} (document-level spans), ELMo-like layers."""
    g = torch.Generator().manual_seed(seed)
    t = max(lengths)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    words = torch.randint(2, VOCAB, mask.shape, generator=g) * mask
    chars = torch.randint(1, N_CHARS, (*mask.shape, CONFIG.max_word_chars), generator=g)
    chars = chars * mask[:, :, None]
    speakers = (torch.arange(len(lengths))[:, None] % 2 + 1).expand_as(mask) * mask
    layers = Layers(torch.randn(2, len(lengths), t, 3, generator=g) * mask[None, :, :, None], mask)
    gold = torch.tensor([[0, 1, 1], [6, 6, 1], [9, 10, 1], [2, 2, 2], [12, 12, 2]])
    return CorefBatch(
        words, chars, mask, speakers, torch.tensor(3), gold[:, 0], gold[:, 1], gold[:, 2], layers
    )


def _padded(batch: CorefBatch, pad: int) -> CorefBatch:
    """``batch`` with ``pad`` more padding columns (garbage ids and layers under the mask)."""

    def grow(x: torch.Tensor, dim: int, fill: float) -> torch.Tensor:
        shape = list(x.shape)
        shape[dim] = pad
        return torch.cat([x, torch.full(shape, fill, dtype=x.dtype)], dim=dim)

    assert batch.layers is not None
    layers = Layers(grow(batch.layers.tensors, 2, 7.0), grow(batch.layers.mask, 1, False))
    return dataclasses.replace(
        batch,
        words=grow(batch.words, 1, 0),
        chars=grow(batch.chars, 1, 0),
        mask=grow(batch.mask, 1, False),
        speakers=grow(batch.speakers, 1, 0),
        layers=layers,
    )


def test_candidate_spans_stay_inside_sentences() -> None:
    sentence_of = torch.tensor([0] * 5 + [1] * 3 + [2] * 6)
    starts, ends = candidate_spans(sentence_of, 3)
    expected = sum(sum(n - w + 1 for w in range(1, min(3, n) + 1)) for n in LENGTHS)
    assert len(starts) == expected == 12 + 6 + 15
    assert bool((sentence_of[starts] == sentence_of[ends]).all())
    assert bool(((ends - starts) < 3).all()) and bool((ends >= starts).all())
    assert (5, 7) in set(zip(starts.tolist(), ends.tolist(), strict=True))
    assert (4, 5) not in set(zip(starts.tolist(), ends.tolist(), strict=True))  # crosses 0|1
    assert candidate_spans(torch.zeros(0, dtype=torch.long), 3)[0].numel() == 0


def test_pruning_keeps_the_best_non_crossing_spans() -> None:
    starts = [0, 1, 0, 2, 3, 5]
    ends = [2, 3, 0, 2, 4, 5]
    scores = [5.0, 4.0, 3.0, 2.0, 1.0, 0.5]
    # (1, 3) crosses (0, 2); (0, 0) and (2, 2) nest inside (0, 2); (3, 4) does not cross (0, 2)
    assert prune_spans(starts, ends, scores, 10) == [2, 0, 3, 4, 5]  # by (start, end)
    assert prune_spans(starts, ends, scores, 3) == [2, 0, 3]  # the top 3, by position
    assert prune_spans(starts, ends, scores, 0) == []
    # the mirrored crossing (a span starting before an accepted one and ending inside it)
    assert prune_spans([2, 0], [4, 3], [2.0, 1.0], 5) == [0]


def test_the_model_keeps_floor_lambda_t_spans() -> None:
    model = _model()
    with torch.no_grad():
        out = model(_batch())
    total = sum(LENGTHS)
    assert len(out.starts) == math.floor(0.4 * total) == 5
    assert out.candidates == 33
    pairs = list(zip(out.starts.tolist(), out.ends.tolist(), strict=True))
    assert pairs == sorted(pairs)
    assert bool((out.antecedents < torch.arange(len(pairs))).all())  # antecedents precede


def test_distance_buckets() -> None:
    d = torch.tensor([0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 63, 64, 1000])
    assert distance_buckets(d).tolist() == [0, 1, 2, 3, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9]


def test_pair_features_speaker_genre_distance() -> None:
    model = _model()
    speakers = torch.tensor([1, 2, 1, 1])
    antecedents = torch.tensor([[0, 0], [0, 0], [1, 0], [2, 1]])  # i − 1, i − 2 (clamped)
    phi = model.pair_features(speakers, torch.tensor(5), antecedents)
    assert phi is not None and phi.shape == (4, 2, 9)
    f = CONFIG.feature_size
    same = model.speaker_embedding.weight  # type: ignore[union-attr]
    assert torch.equal(phi[2, 0, :f], same[0])  # speaker 1 vs speaker 2
    assert torch.equal(phi[3, 0, :f], same[1])  # speaker 1 vs speaker 1
    assert torch.equal(phi[1, 1, f : 2 * f], model.genre_embedding.weight[5])  # type: ignore[union-attr]
    distance = model.distance_embedding.weight  # type: ignore[union-attr]
    assert torch.equal(phi[3, 0, 2 * f :], distance[1]) and torch.equal(
        phi[3, 1, 2 * f :], distance[2]
    )
    off = _model(config=dataclasses.replace(CONFIG, use_metadata=False, use_features=False))
    assert off.pair_features(speakers, torch.tensor(5), antecedents) is None
    assert off.pair_dim == 3 * off.span_dim


def _brute_force_loss(model: SpanRankingCoref, batch: CorefBatch) -> tuple[float, list[int]]:
    """The loss with explicit pair concatenations and Python loops over kept spans."""
    context, text, sentence_of = model.encode(batch)
    config = model.config
    starts, ends = candidate_spans(sentence_of, config.max_span_width)
    emb = model.span_embeddings(context, text, starts, ends)
    s_m = model.mention_scorer(emb).squeeze(-1)
    k = math.floor(context.shape[0] * config.spans_per_word)
    kept = prune_spans(starts.tolist(), ends.tolist(), s_m.tolist(), k)
    spans = [(int(starts[i]), int(ends[i])) for i in kept]
    gold = {
        (int(s), int(e)): int(c)
        for s, e, c in zip(batch.gold_starts, batch.gold_ends, batch.gold_clusters, strict=True)  # type: ignore[arg-type]
    }
    speakers = batch.speakers[batch.mask]
    total, predicted = 0.0, []
    for i, a in enumerate(kept):
        logits, labels = [0.0], [True]
        for j in range(i - 1, max(-1, i - 1 - config.max_antecedents), -1):
            b = kept[j]
            same = torch.tensor(int(speakers[spans[i][0]] == speakers[spans[j][0]]))
            phi = torch.cat(
                [
                    model.speaker_embedding(same),  # type: ignore[misc]
                    model.genre_embedding(batch.genre),  # type: ignore[misc]
                    model.distance_embedding(distance_buckets(torch.tensor(i - j))),  # type: ignore[misc]
                ]
            )
            pair = torch.cat([emb[a], emb[b], emb[a] * emb[b], phi])
            hidden = torch.relu(model.pair_first(pair))
            score = model.pair_rest(hidden).squeeze(-1)  # type: ignore[misc]
            logits.append(float(s_m[a] + s_m[b] + score))
            c_i, c_j = gold.get(spans[i], 0), gold.get(spans[j], 0)
            labels.append(c_i > 0 and c_i == c_j)
        if any(labels[1:]):
            labels[0] = False
        norm = math.log(sum(math.exp(x) for x in logits))
        total += norm - math.log(sum(math.exp(x) for x, y in zip(logits, labels, strict=True) if y))
        best = max(range(len(logits)), key=lambda n: logits[n])
        predicted.append(i - best if best > 0 else -1)
    return total, predicted


@pytest.mark.parametrize("sites", [frozenset(), frozenset({"input", "output"})])
def test_loss_matches_a_brute_force_computation(sites: frozenset[str]) -> None:
    model = _model(sites, config=dataclasses.replace(CONFIG, spans_per_word=1.0))
    batch = _batch()
    with torch.no_grad():
        out = model(batch)
        expected, predicted = _brute_force_loss(model, batch)
    assert out.loss is not None
    assert float(out.loss) == pytest.approx(expected, rel=1e-5, abs=1e-5)
    assert out.antecedents.tolist() == predicted
    assert float(out.loss) > 0


def test_first_pair_layer_in_parts_equals_the_concatenation() -> None:
    model = _model()
    g = torch.Generator().manual_seed(1)
    spans = torch.randn(6, model.span_dim, generator=g)
    antecedents = torch.tensor([[0, 0], [0, 0], [1, 0], [2, 1], [3, 2], [4, 3]])
    phi = model.pair_features(torch.tensor([1, 2, 1, 1, 2, 2]), torch.tensor(1), antecedents)
    weight, bias = model.pair_first.weight, model.pair_first.bias
    d = model.span_dim
    got = model._block_scores(
        spans,
        spans,
        spans @ weight[:, :d].T + bias,
        spans @ weight[:, d : 2 * d].T,
        antecedents,
        phi,
    )
    g_j = spans[antecedents]
    pairs = torch.cat([spans[:, None].expand_as(g_j), g_j, spans[:, None] * g_j, phi], dim=-1)  # type: ignore[list-item]
    want = model.pair_rest(torch.relu(model.pair_first(pairs))).squeeze(-1)  # type: ignore[misc]
    assert torch.allclose(got, want, atol=1e-6)


def test_padding_does_not_change_outputs() -> None:
    model = _model(frozenset({"input", "output"}))
    with torch.no_grad():
        a, b = model(_batch()), model(_padded(_batch(), 4))
    assert a.loss is not None and b.loss is not None
    assert float(a.loss) == pytest.approx(float(b.loss), abs=1e-5)
    assert torch.equal(a.starts, b.starts) and torch.equal(a.antecedents, b.antecedents)


@pytest.mark.parametrize(
    "sites",
    [frozenset(), frozenset({"input"}), frozenset({"output"}), frozenset({"input", "output"})],
)
def test_sites_build_train_and_predict(sites: frozenset[str]) -> None:
    model = _model(sites).train()
    out = model(_batch())
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()
    grads = [p.grad for p in model.injector.parameters()]
    assert all(g is not None for g in grads)  # the mixes of every active site learn
    extra = model.injector.extra_dim("input")
    assert model.encoder.input_dim == 4 + 2 + 3 * 2 + extra


def test_training_cuts_documents_to_max_sentences() -> None:
    config = dataclasses.replace(CONFIG, max_training_sentences=2)
    model = _model(config=config).train()
    batch = _batch()
    cut = model.truncate(batch)
    assert cut.mask.shape[0] == 2 and cut.layers is not None and cut.layers.tensors.shape[1] == 2
    offset = 0 if cut.mask.sum() == 8 else 5  # sentences 0–1 (8 tokens) or 1–2 (9 tokens)
    spans = set(zip(cut.gold_starts.tolist(), cut.gold_ends.tolist(), strict=True))  # type: ignore[union-attr]
    full = {(0, 1), (6, 6), (9, 10), (2, 2), (12, 12)}
    assert spans == {
        (s - offset, e - offset)
        for s, e in full
        if offset <= s and e < offset + int(cut.mask.sum())
    }
    assert model.eval().truncate(batch) is not None
    with torch.no_grad():
        assert model(batch).candidates == 33  # evaluation reads whole documents


def test_blockwise_antecedent_scores_equal_one_block() -> None:
    small = _model(config=dataclasses.replace(CONFIG, antecedent_block=2, spans_per_word=1.0))
    whole = _model(config=dataclasses.replace(CONFIG, antecedent_block=1000, spans_per_word=1.0))
    whole.load_state_dict(small.state_dict())
    a, b = small.train()(_batch()), whole.train()(_batch())  # training: checkpointed blocks
    torch.manual_seed(0)
    assert a.loss is not None and b.loss is not None
    small.eval(), whole.eval()
    with torch.no_grad():
        x, y = small(_batch()), whole(_batch())
    assert x.loss is not None and y.loss is not None
    assert float(x.loss) == pytest.approx(float(y.loss), rel=1e-6)
    assert torch.equal(x.antecedents, y.antecedents)
    for model in (small, whole):
        model.zero_grad()
        model.eval()(_batch()).loss.backward()  # type: ignore[union-attr]
    for (name, p), q in zip(small.named_parameters(), whole.parameters(), strict=True):
        if p.grad is not None:
            assert torch.allclose(p.grad, q.grad, atol=1e-6), name  # type: ignore[arg-type]


def test_checkpointed_blocks_give_the_same_gradients() -> None:
    config = dataclasses.replace(CONFIG, spans_per_word=1.0, dropout=0.0, lexical_dropout=0.0)
    small = _model(config=dataclasses.replace(config, antecedent_block=2))
    whole = _model(config=config)
    whole.load_state_dict(small.state_dict())
    for model in (small, whole):
        model.train()
        torch.manual_seed(0)
        model(_batch()).loss.backward()  # type: ignore[union-attr]
    for (name, p), q in zip(small.named_parameters(), whole.parameters(), strict=True):
        if p.grad is not None:
            assert torch.allclose(p.grad, q.grad, atol=1e-5), name  # type: ignore[arg-type]


def test_document_without_mentions_and_tiny_documents() -> None:
    model = _model().train()
    empty = dataclasses.replace(
        _batch(),
        gold_starts=torch.zeros(0, dtype=torch.long),
        gold_ends=torch.zeros(0, dtype=torch.long),
        gold_clusters=torch.zeros(0, dtype=torch.long),
    )
    out = model(empty)
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()  # all-ε labels still give a graph
    one = _batch(lengths=[1])
    one = dataclasses.replace(
        one,
        gold_starts=one.gold_starts[:0],
        gold_ends=one.gold_ends[:0],
        gold_clusters=one.gold_clusters[:0],
    )  # type: ignore[index]
    with torch.no_grad():
        tiny = model.eval()(one)
    assert len(tiny.starts) == 1 and tiny.antecedents.tolist() == [-1]


def test_clusters_from_antecedents() -> None:
    starts, ends = [0, 2, 4, 6, 8], [0, 3, 4, 6, 9]
    assert clusters_from_antecedents(starts, ends, [-1, -1, 0, 1, 2]) == [
        [(0, 0), (4, 4), (8, 9)],
        [(2, 3), (6, 6)],
    ]
    assert clusters_from_antecedents(starts, ends, [-1] * 5) == []


@pytest.mark.parametrize("sites", [frozenset(), frozenset({"input"})])
def test_head_reads_elmo_widens_the_head_by_the_input_site(sites: frozenset[str]) -> None:
    plain = _model(sites)
    config = dataclasses.replace(CONFIG, head_reads_elmo=True)
    model = _model(sites, config).train()
    extra = model.injector.extra_dim("input")
    assert model.span_dim == plain.span_dim + extra  # head values: text (+ the input site's)
    batch = _batch()
    context, values, _ = model.encode(batch)
    assert values.shape == (sum(LENGTHS), 4 + 2 + 3 * 2 + extra)
    out = model(batch)
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()
    if sites:  # the mix is reached through the head values too
        assert all(p.grad is not None for p in model.injector.parameters())


def test_allennlp_init_draws_xavier_normal_scorers_and_feature_embeddings() -> None:
    """``init="allennlp"``: every FFNN weight and feature embedding Xavier-normal (their spread
    matches √(2 / (fan_in + fan_out)) over many seeds); the default keeps PyTorch's (N(0, 1)
    embeddings, uniform ±1/√fan_in weights); the LSTM and the char CNN are drawn the same."""
    config = dataclasses.replace(CONFIG, init="allennlp")
    spread: dict[str, list[float]] = {"torch": [], "allennlp": []}
    for seed in range(20):
        for name, c in (("torch", CONFIG), ("allennlp", config)):
            model = _model(config=c, seed=seed)
            w = model.distance_embedding.weight  # (buckets, f)
            spread[name].append(float(w.detach().std()))
            if seed == 0 and name == "allennlp":
                same = _model(seed=0)
                assert torch.equal(model.encoder.input_weight, same.encoder.input_weight)
                assert torch.equal(model.chars.embedding.weight, same.chars.embedding.weight)
    buckets, f = model.distance_embedding.weight.shape
    xavier = (2.0 / (buckets + f)) ** 0.5
    assert abs(sum(spread["allennlp"]) / 20 - xavier) < 0.15 * xavier
    assert abs(sum(spread["torch"]) / 20 - 1.0) < 0.15
    with pytest.raises(ValueError, match="init"):
        dataclasses.replace(CONFIG, init="glorot")  # type: ignore[arg-type]


def test_allennlp_dropout_sites_keep_dropout_between_the_ffnn_layers_only() -> None:
    """``dropout_sites="allennlp"``: in training the context (recurrent mask and output) and the
    width features come out as in evaluation (no dropout there), while the FFNNs still drop;
    under the default e2e sites the same training pass differs from evaluation."""
    batch = _batch()
    for sites, context_drops in (("e2e", True), ("allennlp", False)):
        config = dataclasses.replace(CONFIG, lexical_dropout=0.0, dropout=0.5, dropout_sites=sites)
        model = _model(config=config)
        context, values, _ = model.encode(batch)
        starts, ends = torch.tensor([0, 1, 4]), torch.tensor([1, 3, 4])
        spans = model.span_embeddings(context, values, starts, ends)  # (3, span_dim)
        model.train()
        torch.manual_seed(1)
        context_t, values_t, _ = model.encode(batch)
        spans_t = model.span_embeddings(context_t, values_t, starts, ends)
        assert torch.equal(values_t, values)
        assert torch.allclose(spans_t, spans) is not context_drops
        scores = model.mention_scorer(spans)  # (3, 1): the FFNN drops under both sites
        assert not torch.allclose(scores, model.eval().mention_scorer(spans))
    with pytest.raises(ValueError, match="dropout_sites"):
        dataclasses.replace(CONFIG, dropout_sites="tf")  # type: ignore[arg-type]
