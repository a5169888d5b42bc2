"""The linear-chain CRF and Viterbi against brute-force enumeration of every label sequence."""

from __future__ import annotations

import itertools

import pytest
import torch

from tasks.common.spans import SCHEMES, is_valid
from tasks.nn.crf import ConditionalRandomField, allowed_transitions, viterbi_decode

LABELS = {
    "IOB1": ["O", "I-PER", "B-PER", "I-LOC", "B-LOC"],
    "IOB2": ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"],
    "BIOUL": ["O", "B-PER", "I-PER", "L-PER", "U-PER", "U-LOC"],
}


def _valid_by_masks(path: tuple[int, ...], allowed: tuple[torch.Tensor, ...]) -> bool:
    start, moves, end = allowed
    if not path:
        return True
    return (
        bool(start[path[0]])
        and bool(end[path[-1]])
        and all(bool(moves[a, b]) for a, b in itertools.pairwise(path))
    )


def _brute_score(
    crf: ConditionalRandomField, emissions: torch.Tensor, path: tuple[int, ...]
) -> torch.Tensor:
    """score(path) written out term by term (emissions: (t, L) of one sequence)."""
    total = sum(emissions[i, y] for i, y in enumerate(path))
    total = total + sum(crf.transitions[a, b] for a, b in itertools.pairwise(path))
    if crf.start is not None and path:
        total = total + crf.start[path[0]] + crf.end[path[-1]]
    return torch.as_tensor(total, dtype=emissions.dtype)


def _case(seed: int, labels: int, lengths: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    emissions = torch.randn(len(lengths), max(lengths), labels, generator=g, dtype=torch.float64)
    mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
    return emissions * 2, mask


@pytest.mark.parametrize("scheme", SCHEMES)
def test_allowed_transitions_are_exactly_is_valid(scheme: str) -> None:
    labels = LABELS[scheme]
    allowed = allowed_transitions(labels, scheme)  # type: ignore[arg-type]
    for length in range(1, 5):
        for path in itertools.product(range(len(labels)), repeat=length):
            tags = [labels[i] for i in path]
            assert _valid_by_masks(path, allowed) == is_valid(tags, scheme), tags  # type: ignore[arg-type]


def test_allowed_transitions_examples_and_errors() -> None:
    start, moves, end = allowed_transitions(LABELS["BIOUL"], "BIOUL")
    o, b_per, i_per, l_per, u_per, u_loc = range(6)
    assert start.tolist() == [True, True, False, False, True, True]
    assert end.tolist() == [True, False, False, True, True, True]
    assert moves[b_per, l_per] and not moves[b_per, o] and not moves[o, i_per]
    assert moves[u_per, u_loc] and not moves[i_per, u_loc]
    none = allowed_transitions(["NN", "VB"], None)
    assert all(bool(m.all()) for m in none)
    with pytest.raises(ValueError, match="'L-PER' is not a IOB2 tag"):
        allowed_transitions(["O", "L-PER"], "IOB2")
    with pytest.raises(ValueError, match="unknown scheme"):
        allowed_transitions(["O"], "BIOES")  # type: ignore[arg-type]


@pytest.mark.parametrize("include_start_end", [True, False])
@pytest.mark.parametrize("scheme", [None, *SCHEMES])
def test_log_partition_and_viterbi_match_brute_force(
    scheme: str | None, include_start_end: bool
) -> None:
    labels = LABELS[scheme] if scheme else ["A", "B", "C"]
    allowed = allowed_transitions(labels, scheme) if scheme else None  # type: ignore[arg-type]
    torch.manual_seed(0)
    crf = ConditionalRandomField(len(labels), allowed, include_start_end).double()
    lengths = [4, 1, 3, 0, 2]  # padding of different amounts, and an empty row
    emissions, mask = _case(1, len(labels), lengths)
    partition = crf.log_partition(emissions, mask)
    decoded = crf.decode(emissions, mask)
    masks = allowed or allowed_transitions(labels, None)
    for row, length in enumerate(lengths):
        paths = list(itertools.product(range(len(labels)), repeat=length))
        scores = torch.stack([_brute_score(crf, emissions[row], p) for p in paths])
        # the likelihood normalises over every sequence (constraints only decode, as allennlp)
        expected = torch.logsumexp(scores, 0) if length else torch.tensor(0.0)
        assert partition[row].item() == pytest.approx(expected.item(), abs=1e-9)
        valid = [(s, p) for s, p in zip(scores.tolist(), paths, strict=True)]
        valid = [(s, p) for s, p in valid if _valid_by_masks(p, masks)]
        best = max(valid)[1]
        assert tuple(decoded[row]) == best
        if scheme and length:
            assert is_valid([labels[i] for i in decoded[row]], scheme)  # type: ignore[arg-type]


def test_log_likelihood_is_gold_score_minus_partition_and_at_most_zero() -> None:
    torch.manual_seed(1)
    crf = ConditionalRandomField(4).double()
    lengths = [5, 2, 3]
    emissions, mask = _case(2, 4, lengths)
    tags = torch.randint(0, 4, mask.shape)
    ll = crf.log_likelihood(emissions, tags, mask)
    assert (ll <= 0).all()
    for row, length in enumerate(lengths):
        path = tuple(tags[row, :length].tolist())
        gold = _brute_score(crf, emissions[row], path)
        assert ll[row].item() == pytest.approx(
            (
                gold
                - crf.log_partition(
                    emissions[row : row + 1, :length], mask[row : row + 1, :length]
                )[0]
            ).item(),
            abs=1e-9,
        )
    # tags and emissions at padded positions change nothing
    noisy_tags = tags.masked_fill(~mask, 3)
    noisy = emissions.masked_fill(~mask[:, :, None], 50.0)
    assert torch.allclose(crf.log_likelihood(noisy, noisy_tags, mask), ll)
    assert crf.decode(noisy, mask) == crf.decode(emissions, mask)


def test_gradient_flows_to_emissions_and_parameters() -> None:
    torch.manual_seed(2)
    allowed = allowed_transitions(LABELS["BIOUL"], "BIOUL")
    crf = ConditionalRandomField(6, allowed)
    emissions = torch.randn(2, 3, 6, requires_grad=True)
    mask = torch.tensor([[True, True, True], [True, True, False]])
    tags = torch.tensor([[1, 3, 0], [4, 5, 0]])
    (-crf.log_likelihood(emissions, tags, mask).sum()).backward()
    assert emissions.grad is not None and emissions.grad.abs().sum() > 0
    assert emissions.grad[1, 2].abs().sum() == 0  # padding gets no gradient
    for param in (crf.transitions, crf.start, crf.end):
        assert param is not None and param.grad is not None and param.grad.abs().sum() > 0


@pytest.mark.parametrize("scheme", SCHEMES)
def test_decoded_sequences_are_always_valid(scheme: str) -> None:
    labels = [
        "O",
        *(
            f"{p}-{t}"
            for t in ("PER", "LOC", "ORG")
            for p in ("BILU" if scheme == "BIOUL" else "BI")
        ),
    ]
    allowed = allowed_transitions(labels, scheme)  # type: ignore[arg-type]
    g = torch.Generator().manual_seed(3)
    for _ in range(20):
        lengths = torch.randint(1, 12, (8,), generator=g).tolist()
        emissions = 5 * torch.randn(8, max(lengths), len(labels), generator=g)
        mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
        transitions = torch.randn(len(labels), len(labels), generator=g)
        for path, length in zip(
            viterbi_decode(emissions, mask, transitions, allowed), lengths, strict=True
        ):
            assert len(path) == length
            assert is_valid([labels[i] for i in path], scheme)  # type: ignore[arg-type]


def test_unconstrained_viterbi_is_argmax_without_transitions() -> None:
    emissions, mask = _case(4, 5, [6, 3])
    paths = viterbi_decode(emissions, mask)
    assert paths[0] == emissions[0].argmax(-1).tolist()
    assert paths[1] == emissions[1, :3].argmax(-1).tolist()


def test_bad_shapes_and_masks_raise() -> None:
    emissions = torch.zeros(2, 3, 4)
    with pytest.raises(ValueError, match="left-aligned"):
        viterbi_decode(emissions, torch.tensor([[False, True, True], [True, True, True]]))
    with pytest.raises(ValueError, match="emissions must be"):
        viterbi_decode(emissions, torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="allowed masks have shapes"):
        ConditionalRandomField(3, allowed_transitions(["O"], None))
