"""Linear-chain conditional random field and (constrained) Viterbi decoding.

The sequence layer of the paper's NER baseline (Peters et al. 2018, §4 and A.7, unverified: "a CRF
loss", Viterbi decoding restricted to valid tag sequences; Lample et al. 2016, §2.2 for the CRF
itself): for emissions ``E`` (batch, time, L) and a tag sequence ``y``,

    score(y) = start[y_1] + Σ_i E[i, y_i] + Σ_i T[y_i, y_{i+1}] + end[y_n]

and ``log p(y) = score(y) − log Σ_y' exp score(y')`` (the forward algorithm). As allennlp's
``ConditionalRandomField`` (the reference for the paper's NER numbers; docs/reference/ner.md), the
tag-scheme constraints of :func:`allowed_transitions` apply when **decoding** (a disallowed move
scores −inf, so Viterbi never emits an invalid sequence) and not to the training likelihood, which
normalises over all label sequences.

Masks are ``bool (batch, time)`` and left-aligned (the first ``n`` positions are real); positions
after a sequence's end never change its scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from tasks.common.spans import Scheme, split_tag

__all__ = ["ConditionalRandomField", "allowed_transitions", "viterbi_decode"]

_PREFIXES: dict[str, frozenset[str]] = {
    "IOB1": frozenset("BI"),
    "IOB2": frozenset("BI"),
    "BIOUL": frozenset("BILU"),
}


def _parts(labels: Sequence[str], scheme: str) -> list[tuple[str, str]]:
    """``(prefix, type)`` of each label, checked against ``scheme``."""
    parts = []
    for label in labels:
        prefix, chunk_type = split_tag(label)
        if label == "O":
            parts.append(("O", ""))
            continue
        if prefix not in _PREFIXES[scheme] or not chunk_type:
            raise ValueError(f"label {label!r} is not a {scheme} tag")
        parts.append((prefix, chunk_type))
    return parts


def allowed_transitions(
    labels: Sequence[str], scheme: Scheme | None
) -> tuple[Tensor, Tensor, Tensor]:
    """What a tag scheme allows: a sequence is valid iff its first label, every move and its last
    label are allowed (then it is exactly :func:`tasks.common.spans.is_valid`).

    * ``IOB1``: starts with ``O`` or ``I-X``; ``B-X`` only right after ``B-X``/``I-X`` (a chunk
      directly after one of the same type); anything may end.
    * ``IOB2``: starts with ``O`` or ``B-X``; ``I-X`` only after ``B-X``/``I-X``; anything may end.
    * ``BIOUL``: starts with ``O``, ``B-X``, ``U-X``; after ``B-X``/``I-X`` only ``I-X``/``L-X``;
      after ``O``/``L-X``/``U-X`` only ``O``/``B-Y``/``U-Y``; ends with ``O``/``L-X``/``U-X``.
    * ``None``: everything is allowed (plain tags such as POS).

    Args:
        labels: full tag strings (``"B-PER"``, ``"O"``), in label-id order.
        scheme: ``"IOB1"``, ``"IOB2"``, ``"BIOUL"`` or ``None``.

    Returns:
        ``(start (L,), transitions (L, L) indexed [from, to], end (L,))`` bool masks.

    Raises:
        ValueError: unknown scheme, or a label that is not ``O`` or ``P-TYPE`` with a prefix of
            the scheme.
    """
    n = len(labels)
    if scheme is None:
        ones = torch.ones(n, dtype=torch.bool)
        return ones, torch.ones(n, n, dtype=torch.bool), ones.clone()
    if scheme not in _PREFIXES:
        raise ValueError(f"unknown scheme {scheme!r}; valid: {', '.join(_PREFIXES)} or None")
    parts = _parts(labels, scheme)
    start = torch.zeros(n, dtype=torch.bool)
    end = torch.zeros(n, dtype=torch.bool)
    moves = torch.zeros(n, n, dtype=torch.bool)
    for j, (prefix, chunk_type) in enumerate(parts):
        if scheme == "IOB1":
            start[j] = prefix in ("O", "I")
        elif scheme == "IOB2":
            start[j] = prefix in ("O", "B")
        else:
            start[j] = prefix in ("O", "B", "U")
        end[j] = scheme != "BIOUL" or prefix in ("O", "L", "U")
        for i, (prev, prev_type) in enumerate(parts):
            inside = prev in ("B", "I") and prev_type == chunk_type  # continues the open chunk
            if scheme == "IOB1":
                moves[i, j] = prefix != "B" or inside
            elif scheme == "IOB2":
                moves[i, j] = prefix != "I" or inside
            elif prev in ("B", "I"):
                moves[i, j] = inside and prefix in ("I", "L")
            else:
                moves[i, j] = prefix in ("O", "B", "U")
    return start, moves, end


def _scores_or_zero(scores: Tensor | None, shape: tuple[int, ...], like: Tensor) -> Tensor:
    if scores is None:
        return like.new_zeros(shape)
    if tuple(scores.shape) != shape:
        raise ValueError(f"expected scores of shape {shape}, got {tuple(scores.shape)}")
    return scores.to(like.dtype)


def _lengths(emissions: Tensor, mask: Tensor) -> Tensor:
    if emissions.dim() != 3 or mask.shape != emissions.shape[:2]:
        raise ValueError(
            f"emissions must be (batch, time, labels) and mask (batch, time); got "
            f"{tuple(emissions.shape)} and {tuple(mask.shape)}"
        )
    mask = mask.bool()
    lengths = mask.sum(1)  # (b,)
    left_aligned = torch.arange(mask.shape[1], device=mask.device)[None, :] < lengths[:, None]
    if not torch.equal(left_aligned, mask):
        raise ValueError("the mask must be left-aligned (real positions first)")
    return lengths


def viterbi_decode(
    emissions: Tensor,
    mask: Tensor,
    transitions: Tensor | None = None,
    allowed: tuple[Tensor, Tensor, Tensor] | None = None,
    start: Tensor | None = None,
    end: Tensor | None = None,
) -> list[list[int]]:
    """The highest-scoring label sequence of each row (Viterbi 1967).

    Args:
        emissions: (batch, time, L) per-position label scores.
        mask: (batch, time) bool, left-aligned.
        transitions: (L, L) scores indexed [from, to]; ``None`` = 0.
        allowed: ``(start, transitions, end)`` bool masks (:func:`allowed_transitions`); a
            disallowed first label, move or last label scores −inf (a hard constraint).
        start: (L,) scores of the first label; ``None`` = 0.
        end: (L,) scores of the last label; ``None`` = 0.

    Returns:
        The best label ids of each sequence (length = its mask row sum; ``[]`` for an empty row).
        With ``allowed``, never an invalid sequence (when a valid one exists).
    """
    lengths = _lengths(emissions, mask)
    b, t, n = emissions.shape
    emissions = emissions.detach().float()  # (b, t, L)
    moves = _scores_or_zero(transitions, (n, n), emissions).detach()  # (L, L)
    first = _scores_or_zero(start, (n,), emissions).detach()  # (L,)
    last = _scores_or_zero(end, (n,), emissions).detach()  # (L,)
    if allowed is not None:
        ok_start, ok_moves, ok_end = (a.to(emissions.device).bool() for a in allowed)
        minus_inf = float("-inf")
        first = first.masked_fill(~ok_start, minus_inf)
        moves = moves.masked_fill(~ok_moves, minus_inf)
        last = last.masked_fill(~ok_end, minus_inf)
    if t == 0:
        return [[] for _ in range(b)]
    score = first[None, :] + emissions[:, 0]  # (b, L)
    pointers = []
    for i in range(1, t):
        candidates = score[:, :, None] + moves[None, :, :]  # (b, L_from, L_to)
        best, pointer = candidates.max(dim=1)  # (b, L), (b, L)
        step = best + emissions[:, i]  # (b, L)
        live = mask[:, i, None]  # (b, 1)
        score = torch.where(live, step, score)  # (b, L)
        pointers.append(pointer)
    final = score + last[None, :]  # (b, L)
    best_last = final.argmax(dim=1).tolist()  # (b,)
    pointer_rows = torch.stack(pointers).tolist() if pointers else []  # (t - 1, b, L)
    paths: list[list[int]] = []
    for row, length in enumerate(lengths.tolist()):
        if length == 0:
            paths.append([])
            continue
        path = [best_last[row]]
        for i in range(length - 1, 0, -1):
            path.append(pointer_rows[i - 1][row][path[-1]])
        paths.append(path[::-1])
    return paths


class ConditionalRandomField(nn.Module):
    """A linear-chain CRF over ``num_labels`` labels, with optional scheme constraints at decoding.

    Parameters: ``transitions`` (L, L) indexed [from, to], and, when ``include_start_end``,
    ``start`` and ``end`` (L,) scores. Initialisation as allennlp: Xavier-normal transitions,
    normal(0, 1) start/end. allennlp's ``crf_tagger`` NER configuration sets
    ``include_start_end_transitions: false`` (allennlp-models @b1f3722
    ``training_config/tagging/ner.jsonnet``).

    Args:
        num_labels: L.
        allowed: ``(start, transitions, end)`` bool masks from :func:`allowed_transitions`; used
            by :meth:`decode` (never by the likelihood, as allennlp).
        include_start_end: learn start and end scores.
    """

    allowed_start: Tensor  # (L,) bool buffers, registered in __init__
    allowed_moves: Tensor  # (L, L)
    allowed_end: Tensor  # (L,)

    def __init__(
        self,
        num_labels: int,
        allowed: tuple[Tensor, Tensor, Tensor] | None = None,
        include_start_end: bool = True,
    ) -> None:
        super().__init__()
        self.num_labels = num_labels
        self.transitions = nn.Parameter(torch.empty(num_labels, num_labels))
        nn.init.xavier_normal_(self.transitions)
        self.start: nn.Parameter | None = None
        self.end: nn.Parameter | None = None
        if include_start_end:
            self.start = nn.Parameter(torch.randn(num_labels))
            self.end = nn.Parameter(torch.randn(num_labels))
        if allowed is None:
            allowed = allowed_transitions(["O"] * num_labels, None)
        ok_start, ok_moves, ok_end = allowed
        shapes = (tuple(ok_start.shape), tuple(ok_moves.shape), tuple(ok_end.shape))
        if shapes != ((num_labels,), (num_labels, num_labels), (num_labels,)):
            raise ValueError(f"allowed masks have shapes {shapes} for {num_labels} labels")
        self.register_buffer("allowed_start", ok_start.bool().clone(), persistent=False)
        self.register_buffer("allowed_moves", ok_moves.bool().clone(), persistent=False)
        self.register_buffer("allowed_end", ok_end.bool().clone(), persistent=False)

    def _start_end(self, like: Tensor) -> tuple[Tensor, Tensor]:
        n = self.num_labels
        if self.start is None or self.end is None:
            return like.new_zeros(n), like.new_zeros(n)
        return self.start.to(like.dtype), self.end.to(like.dtype)

    def log_partition(self, emissions: Tensor, mask: Tensor) -> Tensor:
        """``log Σ_y exp score(y)`` over every label sequence (the forward algorithm).

        Args:
            emissions: (batch, time, L); ``mask``: (batch, time) bool, left-aligned.

        Returns:
            (batch,); 0 for an empty row.
        """
        lengths = _lengths(emissions, mask)
        mask = mask.bool()
        first, last = self._start_end(emissions)
        moves = self.transitions.to(emissions.dtype)  # (L, L)
        if emissions.shape[1] == 0:
            return emissions.new_zeros(emissions.shape[0])
        # unbind: its backward stacks the steps' gradients once (indexing a step would fill
        # and add a zero (b, t, L) gradient per step)
        steps, real = emissions.unbind(1), mask.unbind(1)  # t × (b, L), t × (b,)
        alpha = first[None, :] + steps[0]  # (b, L)
        for i in range(1, len(steps)):
            step = torch.logsumexp(alpha[:, :, None] + moves[None], dim=1)  # (b, L)
            alpha = torch.where(real[i][:, None], step + steps[i], alpha)  # (b, L)
        total = torch.logsumexp(alpha + last[None, :], dim=1)  # (b,)
        return torch.where(lengths > 0, total, torch.zeros_like(total))

    def score(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        """``score(tags)`` of each row: (batch,) (tags at padded positions are ignored)."""
        lengths = _lengths(emissions, mask)
        mask = mask.bool()
        tags = tags.long() * mask  # (b, t): pads read label 0, masked out below
        first, last = self._start_end(emissions)
        if emissions.shape[1] == 0:
            return emissions.new_zeros(emissions.shape[0])
        emitted = emissions.gather(2, tags[:, :, None]).squeeze(2)  # (b, t)
        total = (emitted * mask).sum(1)  # (b,)
        if emissions.shape[1] > 1:
            moves = self.transitions.to(emissions.dtype)[tags[:, :-1], tags[:, 1:]]  # (b, t - 1)
            total = total + (moves * mask[:, 1:]).sum(1)
        last_tag = tags.gather(1, (lengths - 1).clamp_min(0)[:, None]).squeeze(1)  # (b,)
        edges = first[tags[:, 0]] + last[last_tag]  # (b,)
        return total + torch.where(lengths > 0, edges, torch.zeros_like(edges))

    def log_likelihood(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        """``log p(tags | emissions)`` per sequence: (batch,), ≤ 0 (0 for an empty row).

        Args:
            emissions: (batch, time, L) scores; ``tags``: (batch, time) gold label ids;
            ``mask``: (batch, time) bool, left-aligned.
        """
        return self.score(emissions, tags, mask) - self.log_partition(emissions, mask)

    def decode(self, emissions: Tensor, mask: Tensor) -> list[list[int]]:
        """The best valid label ids of each row (:func:`viterbi_decode` with the constraints)."""
        first, last = self._start_end(emissions)
        allowed = (self.allowed_start, self.allowed_moves, self.allowed_end)
        return viterbi_decode(
            emissions, mask, self.transitions, allowed=allowed, start=first, end=last
        )
