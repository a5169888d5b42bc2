"""MUC, B³, CEAF-e as scorer v8.01: classic examples, the scorer's own test cases, traps."""

from __future__ import annotations

import itertools
import random

import pytest

from tasks.coref.metric import (
    align_clusters,
    b_cubed,
    ceafe,
    max_weight_matching,
    muc,
    score_corpus,
    score_document,
)
from tasks.metrics.prf import PRF


def rp(prf: PRF) -> tuple[float, float]:
    return prf.recall, prf.precision


# --------------------------------------------------------------------------------------------------
# classic and hand-computed examples


def test_muc_vilain_example() -> None:
    # Vilain et al. (1995): key {A B C D}; response {A B} {C D}
    # recall = (4 - |{AB},{CD}|) / (4 - 1) = 2/3; precision = (1 + 1) / (1 + 1) = 1
    assert rp(muc([["A", "B", "C", "D"]], [["A", "B"], ["C", "D"]])) == pytest.approx((2 / 3, 1))
    # and the reverse: one link too many -> recall 1, precision 2/3
    assert rp(muc([["A", "B"], ["C", "D"]], [["A", "B", "C", "D"]])) == pytest.approx((1, 2 / 3))


# Worked example (by hand):
#   key      K1 = {1 2 3}, K2 = {4 5}
#   response R1 = {1 2},   R2 = {3 4 5 6} (6 is twinless), R3 = {7} (twinless singleton)
# MUC   recall    = [(3 - |{12},{3}|) + (2 - |{45}|)] / [(3-1) + (2-1)] = (1 + 1) / 3 = 2/3
#       precision = [(2 - 1) + (4 - |{3},{45},{6}|) + (1 - 1)] / [1 + 3 + 0] = 2/4
# B3    recall    = [2²/3 + 1²/3 + 2²/2] / 5 = (4/3 + 1/3 + 2) / 5 = 11/15
#       precision = [2²/2 + (1²/4 + 2²/4 + 0) + 0] / (2 + 4 + 1) = (2 + 5/4) / 7 = 13/28
# CEAF-e φ4(K1,R1) = 2·2/5 = 4/5, φ4(K1,R2) = 2·1/7 = 2/7, φ4(K2,R2) = 2·2/6 = 2/3, others 0
#       best alignment K1-R1, K2-R2: 4/5 + 2/3 = 22/15 (vs 2/7 for K1-R2)
#       recall = (22/15)/2 = 11/15, precision = (22/15)/3 = 22/45
KEY = [[1, 2, 3], [4, 5]]
RESPONSE = [[1, 2], [3, 4, 5, 6], [7]]


def test_hand_worked_example() -> None:
    score = score_document(KEY, RESPONSE)
    assert rp(score.muc) == pytest.approx((2 / 3, 2 / 4))
    assert rp(score.b_cubed) == pytest.approx((11 / 15, 13 / 28))
    assert rp(score.ceafe) == pytest.approx((11 / 15, 22 / 45))
    # mention identification: 5 of 5 key mentions found, 5 of 7 response mentions correct
    assert rp(score.mentions) == pytest.approx((1, 5 / 7))


def test_response_singletons_and_twinless_mentions() -> None:
    # Perfect clusters plus a twinless singleton {9}: MUC ignores it, B3 and CEAF-e pay precision.
    score = score_document(KEY, [*KEY, [9]])
    assert rp(score.muc) == (1, 1)
    assert rp(score.b_cubed) == pytest.approx((1, 5 / 6))
    assert rp(score.ceafe) == pytest.approx((1, 2 / 3))
    # A key mention predicted as a singleton: no MUC link, B3 counts it.
    score = score_document([[1, 2]], [[1], [2]])
    assert rp(score.muc) == (0, 0)
    assert rp(score.b_cubed) == pytest.approx((1 / 2, 1))
    # CEAF-e: φ4({1,2},{1}) = 2/3 is the best single alignment; 1 key, 2 response clusters
    assert rp(score.ceafe) == pytest.approx((2 / 3, 1 / 3))


def test_twinless_mentions_in_a_response_cluster() -> None:
    # response {1 2 x}: x is absent from the key. MUC precision: partitions {12},{x} -> 1/2.
    score = score_document([[1, 2]], [[1, 2, "x"]])
    assert rp(score.muc) == pytest.approx((1, 1 / 2))
    assert rp(score.b_cubed) == pytest.approx((1, (2 / 3 + 2 / 3 + 0) / 3))
    assert rp(score.ceafe) == pytest.approx((4 / 5, 4 / 5))


def test_repeated_mentions_follow_v801() -> None:
    # a key-matching mention repeated later is dropped (first occurrence wins); a twinless
    # mention repeated is kept twice
    aligned = align_clusters([["a", "b"]], [["a", "b"], ["a", "z"], ["x", "x"]])
    assert aligned.repeated_mentions == 1
    a, b = aligned.key[0]
    z, x = aligned.response[1][0], aligned.response[2][0]
    assert aligned.response == ((a, b), (z,), (x, x))
    score = score_document([["a", "b"]], [["a", "b"], ["a", "z"], ["x", "x"]])
    # MUC precision counts the x–x "link": 1 correct of 1 + 0 + 1 links
    assert rp(score.muc) == pytest.approx((1, 1 / 2))
    # B3 precision denominator counts both copies of x: (1 + 1 + 0 + 0 + 0) / 5
    assert rp(score.b_cubed) == pytest.approx((1, 2 / 5))
    # a cluster left empty by the removal disappears
    assert align_clusters([["a"]], [["a"], ["a"]]).response == ((0,),)


def test_empty_inputs() -> None:
    score = score_document([], [])
    for prf in (score.muc, score.b_cubed, score.ceafe):
        assert (prf.recall, prf.precision, prf.f1) == (0, 0, 0)
    score = score_document([[1, 2]], [])
    assert rp(score.muc) == (0, 0) and score.muc.recall_den == 1


# --------------------------------------------------------------------------------------------------
# The reference scorer's own test cases (conll/reference-coreference-scorers,
# test/CorefMetricTestConfig.pm, expected [recall, precision]; test/TestCases.README describes the
# files): key TC-A = {a} {b c} {d e f}. Upper-case B is a mention overlapping b (a different
# span); "b" repeated is a duplicate of b.

TC_A_KEY = [["a"], ["b", "c"], ["d", "e", "f"]]
TC_A = {
    "A1": (
        [["a"], ["b", "c"], ["d", "e", "f"]],
        {"muc": (1, 1), "bcub": (1, 1), "ceafe": (1, 1)},
    ),
    "A2": (
        [["a"], ["d", "e"]],
        {"muc": (1 / 3, 1), "bcub": ((7 / 3) / 6, 1), "ceafe": (0.6, 0.9)},
    ),
    "A3": (
        [["a"], ["b", "c", "x"], ["d", "e", "f", "y"], ["z"]],
        {"muc": (1, 3 / 5), "bcub": (1, (4 + 7 / 12) / 9), "ceafe": (0.88571, 0.66429)},
    ),
    "A4": (
        [["a"], ["b", "c", "x"], ["d", "y"], ["z"]],
        {
            "muc": (1 / 3, 1 / 3),
            "bcub": ((3 + 1 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (0.73333, 0.55),
        },
    ),  # fmt: skip
    "A5": (
        [["a"], ["b", "c", "x", "B"], ["d", "y"], ["z"]],
        {"muc": (1 / 3, 1 / 4), "bcub": ((3 + 1 / 3) / 6, 2.5 / 8), "ceafe": (0.68889, 0.51667)},
    ),
    "A6": (
        [["a"], ["b", "c", "x"], ["d", "y"], ["B", "z"]],
        {
            "muc": (1 / 3, 1 / 4),
            "bcub": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 8),
            "ceafe": (0.73333, 0.55),
        },
    ),  # fmt: skip
    "A7": (
        [["a"], ["b", "c", "x", "b"], ["d", "y"], ["z"]],
        {
            "muc": (1 / 3, 1 / 3),
            "bcub": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (0.73333, 0.55),
        },
    ),  # fmt: skip
    "A8": (
        [["a"], ["b", "c", "x"], ["d", "y"], ["b", "z"]],
        {
            "muc": (1 / 3, 1 / 3),
            "bcub": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (0.73333, 0.55),
        },
    ),  # fmt: skip
    "A9": (
        [["a"], ["b", "c", "x"], ["d", "y"], ["b"] * 10 + ["z"]],
        {
            "muc": (1 / 3, 1 / 3),
            "bcub": ((10 / 3) / 6, (1 + 4 / 3 + 1 / 2) / 7),
            "ceafe": (0.73333, 0.55),
        },
    ),  # fmt: skip
    "A10": (
        [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]],
        {"muc": (0, 0), "bcub": (3 / 6, 6 / 6)},
    ),
    "A11": (
        [["a", "b", "c", "d", "e", "f"]],
        {"muc": (3 / 3, 3 / 5), "bcub": (6 / 6, (1 / 6 + 2 * 2 / 6 + 3 * 3 / 6) / 6)},
    ),
}


@pytest.mark.parametrize("case", sorted(TC_A))
def test_reference_scorer_test_cases(case: str) -> None:
    response, expected = TC_A[case]
    score = score_document(TC_A_KEY, response)
    got = {"muc": score.muc, "bcub": score.b_cubed, "ceafe": score.ceafe}
    for metric, (recall, precision) in expected.items():
        assert got[metric].recall == pytest.approx(recall, abs=1e-5), metric
        assert got[metric].precision == pytest.approx(precision, abs=1e-5), metric


def test_corpus_scores_are_micro_averaged() -> None:
    # doc 1 MUC: 1/1 recall; doc 2 MUC: 0/2 recall -> corpus 1/3 (not the mean of 1 and 0)
    corpus = score_corpus([([[1, 2]], [[1, 2]]), ([[1, 2, 3]], [[1], [2], [3]])])
    assert corpus.muc.recall == pytest.approx(1 / 3)
    assert corpus.num_documents == 2
    expected = (corpus.muc.f1 + corpus.b_cubed.f1 + corpus.ceafe.f1) / 3
    assert corpus.conll_f1 == pytest.approx(expected)
    report = corpus.to_dict()
    assert report["conll_f1"] == pytest.approx(100 * expected)
    assert set(report["muc"]) == {"recall", "precision", "f1"}


# --------------------------------------------------------------------------------------------------
# the assignment solver


def _brute_force(weights: list[list[float]]) -> float:
    rows, cols = len(weights), len(weights[0])
    if rows <= cols:
        return max(
            sum(weights[r][c] for r, c in enumerate(perm))
            for perm in itertools.permutations(range(cols), rows)
        )
    return max(
        sum(weights[r][c] for c, r in enumerate(perm))
        for perm in itertools.permutations(range(rows), cols)
    )


def test_max_weight_matching_against_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(200):
        rows, cols = rng.randint(1, 5), rng.randint(1, 5)
        weights = [
            [rng.choice([0.0, 0.25, 0.5, rng.random()]) for _ in range(cols)] for _ in range(rows)
        ]
        pairs = max_weight_matching(weights)
        assert len(pairs) == min(rows, cols)
        assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)
        assert sum(weights[r][c] for r, c in pairs) == pytest.approx(_brute_force(weights))
    assert max_weight_matching([]) == []


def test_ceafe_components_equal_a_global_assignment() -> None:
    rng = random.Random(1)
    for _ in range(50):
        mentions = list(range(12))
        key = [rng.sample(mentions, rng.randint(1, 4)) for _ in range(rng.randint(1, 4))]
        key = [list(dict.fromkeys(c)) for c in key]
        response = [rng.sample(range(15), rng.randint(1, 4)) for _ in range(rng.randint(1, 5))]
        phi = [[2 * len(set(k) & set(r)) / (len(k) + len(r)) for r in response] for k in key]
        total = _brute_force(phi)
        assert ceafe(key, response).recall_num == pytest.approx(total)
        assert b_cubed(key, response).recall_den == sum(len(k) for k in key)
