"""SQuAD v1.1 metric: hand cases that pin the official evaluate-v1.1.py behaviour."""

from __future__ import annotations

import pytest

from tasks.squad.data import Answer, SquadExample
from tasks.squad.metric import (
    SquadMetric,
    evaluate,
    exact_match_score,
    f1_score,
    metric_max_over_ground_truths,
    normalize_answer,
)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Cat", "cat"),  # case and article
        ("a an the", ""),  # only articles
        ("Anne theatre another", "anne theatre another"),  # articles are whole words only
        ("the-cat", "thecat"),  # punctuation goes first, so no article is left
        ("U.S.A.", "usa"),
        ("  New\tYork \n City ", "new york city"),  # whitespace collapsed
        ("The (old) man's 'boat'!", "old mans boat"),
        ("café’s – “x”", "café’s – “x”"),  # only ASCII string.punctuation is removed
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_exact_match_and_f1_hand_cases() -> None:
    assert exact_match_score("Paris!", "paris")
    assert not exact_match_score("Paris, France", "Paris")
    assert f1_score("the big red dog", "a red dog") == pytest.approx(0.8)  # P 2/3, R 1
    assert f1_score("dog dog dog", "dog") == pytest.approx(0.5)  # bag overlap counts once
    assert f1_score("Paris", "London") == 0
    assert f1_score("", "London") == 0 and not exact_match_score("", "London")
    # an empty prediction matches a gold answer that normalises to "" for EM, never for F1
    assert exact_match_score("", "The") and f1_score("", "The") == 0


def test_max_over_ground_truths() -> None:
    truths = ["Denver Broncos", "The Broncos", "Broncos"]
    assert metric_max_over_ground_truths(exact_match_score, "broncos", truths) is True
    assert metric_max_over_ground_truths(f1_score, "the Denver team", truths) == pytest.approx(
        2 * 0.5 * 0.5 / (0.5 + 0.5)
    )
    with pytest.raises(ValueError, match="no gold answers"):
        metric_max_over_ground_truths(f1_score, "x", [])


def dataset() -> dict[str, object]:
    qas = [
        {"id": "q1", "question": "?", "answers": [{"text": "Denver Broncos", "answer_start": 0}]},
        {"id": "q2", "question": "?", "answers": [{"text": "Carolina", "answer_start": 0}]},
        {
            "id": "q3",
            "question": "?",
            "answers": [
                {"text": "Santa Clara", "answer_start": 0},
                {"text": "Levi's Stadium", "answer_start": 0},
            ],
        },
    ]
    return {
        "version": "1.1",
        "data": [{"title": "T", "paragraphs": [{"context": "c", "qas": qas}]}],
    }


def test_evaluate_averages_over_all_questions(capsys: pytest.CaptureFixture[str]) -> None:
    predictions = {"q1": "the Broncos", "q3": "Levi's Stadium", "unknown": "ignored"}
    scores = evaluate(dataset(), predictions)
    # q1: EM 0, F1 2/3 (P 1, R 1/2); q2 unanswered: 0; q3: EM 1, F1 1
    assert scores == {"exact_match": 100.0 * 1 / 3, "f1": 100.0 * (2 / 3 + 1) / 3}
    assert capsys.readouterr().err == "Unanswered question q2 will receive score 0.\n"
    assert evaluate(dataset()["data"], predictions) == scores  # the official evaluate() input


def test_evaluate_errors() -> None:
    with pytest.raises(ValueError, match="not a string"):
        evaluate(dataset(), {"q1": 3, "q2": "", "q3": ""})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="no questions"):
        evaluate({"data": []}, {})
    with pytest.raises(ValueError, match=r'data\[0\]: missing "paragraphs"'):
        evaluate({"data": [{}]}, {})


def example(qid: str, *texts: str) -> SquadExample:
    return SquadExample(
        qid, "", "c", "?", ("c",), ((0, 1),), ("?",), tuple(Answer(t, 0) for t in texts), (0, 0)
    )


def test_squad_metric_matches_evaluate_and_resets() -> None:
    examples = [
        example("q1", "Denver Broncos"),
        example("q2", "Carolina"),
        example("q3", "Santa Clara", "Levi's Stadium"),
    ]
    predictions = {"q1": "the Broncos", "q3": "Levi's Stadium"}
    metric = SquadMetric()
    assert metric.compute() == {"exact_match": 0.0, "f1": 0.0}
    metric.update(predictions, examples[:2])
    metric.update(predictions, examples[2:])
    result = metric.compute()
    official = evaluate(dataset(), predictions)
    assert 100 * result["exact_match"] == pytest.approx(official["exact_match"])
    assert 100 * result["f1"] == pytest.approx(official["f1"])
    assert metric.total == 3 and metric.missing == 1
    metric.reset()
    assert metric.total == 0 and metric.compute() == {"exact_match": 0.0, "f1": 0.0}
    with pytest.raises(ValueError, match="no gold answers"):
        metric.update({}, [example("q4")])
