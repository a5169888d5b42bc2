"""SQuAD v1.1 exact match and F1, as computed by the official ``evaluate-v1.1.py``.

Rajpurkar et al. (2016), §6 "Evaluation"; Peters et al. (2018), Table 1 (test F1) and Tables 2–3
(dev F1). The official script's documented behaviour, reproduced here:

* ``normalize_answer``: lowercase, delete every character of ``string.punctuation``, replace the
  whole words ``a`` / ``an`` / ``the`` (regex ``\\b(a|an|the)\\b``) by a space, collapse whitespace,
  in that order.
* exact match: normalised strings are equal; F1: precision/recall over the multiset (``Counter``)
  of whitespace tokens of the normalised strings, 0 when no token is shared (so an empty prediction
  scores F1 0; its EM is 1 only against a gold answer that normalises to ``""``).
* each question takes the maximum over its gold answers; both numbers are averaged over **all**
  questions of the dataset and multiplied by 100. A question without a prediction scores 0 and
  ``Unanswered question <id> will receive score 0.`` is printed to stderr; predictions for unknown
  ids are ignored.

Differences, all on inputs the official script crashes on: a dataset without questions, a question
without gold answers and a non-string prediction raise ``ValueError`` here. :class:`SquadMetric`
(the training-time accumulator) reports fractions in [0, 1] (natural units, scaled at render time
as :class:`tasks.core.MetricSpec` does) instead of percentages and does not print.
"""

from __future__ import annotations

import re
import string
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from tasks.common.io import DataError
from tasks.core import Column, MetricSpec, safe_ratio

if TYPE_CHECKING:
    from tasks.squad.data import SquadExample

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_Score = TypeVar("_Score", bool, float)


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation, drop the articles a/an/the, collapse whitespace.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    """Whether the normalised strings are equal."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    """Token-bag F1 between the normalised strings; 0 when they share no token.

    >>> round(f1_score("the big red dog", "a red dog"), 4)
    0.8
    """
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def metric_max_over_ground_truths(
    metric_fn: Callable[[str, str], _Score], prediction: str, ground_truths: Sequence[str]
) -> _Score:
    """The best score of ``prediction`` against any of the gold answers."""
    if not ground_truths:
        raise ValueError("a question has no gold answers (the official script would crash)")
    return max(metric_fn(prediction, ground_truth) for ground_truth in ground_truths)


max_over_ground_truths = metric_max_over_ground_truths  # short alias


def _questions(dataset_json: object, source: str) -> Iterable[tuple[str, list[str]]]:
    """``(id, gold texts)`` of every question, validating only what the official script reads."""
    articles = dataset_json.get("data") if isinstance(dataset_json, dict) else dataset_json
    if not isinstance(articles, list):
        raise DataError(source, None, 'expected a SQuAD JSON object with a "data" list')
    for a, article in enumerate(articles):
        paragraphs = _field(article, "paragraphs", list, f"data[{a}]", source)
        for p, paragraph in enumerate(paragraphs):
            where = f"data[{a}].paragraphs[{p}]"
            for q, qa in enumerate(_field(paragraph, "qas", list, where, source)):
                where_qa = f"{where}.qas[{q}]"
                qid = _field(qa, "id", str, where_qa, source)
                answers = _field(qa, "answers", list, where_qa, source)
                texts = [
                    _field(answer, "text", str, f"{where_qa}.answers[{n}]", source)
                    for n, answer in enumerate(answers)
                ]
                yield qid, texts


def _field(record: object, key: str, kind: type, where: str, source: str) -> Any:
    if not isinstance(record, dict):
        raise DataError(source, None, f"{where}: expected an object")
    if key not in record:
        raise DataError(source, None, f'{where}: missing "{key}"')
    value = record[key]
    if not isinstance(value, kind):
        raise DataError(source, None, f"{where}.{key}: expected {kind.__name__}")
    return value


def evaluate(
    dataset_json: object, predictions: Mapping[str, str], *, source: str = "<dataset>"
) -> dict[str, float]:
    """Official SQuAD v1.1 scores: ``{"exact_match": EM, "f1": F1}`` in percent.

    Args:
        dataset_json: the parsed dataset file (the object with ``"data"``) or its ``"data"`` list
            (what the official ``evaluate()`` takes).
        predictions: question id → predicted answer text.
        source: a name for the dataset in error messages.

    Raises:
        ValueError: a question without gold answers, a non-string prediction, or no questions.
        DataError: (a ``ValueError``) a field the scorer needs is missing or has the wrong type.
    """
    f1 = exact_match = total = 0.0
    for qid, ground_truths in _questions(dataset_json, source):
        total += 1
        if qid not in predictions:
            print(f"Unanswered question {qid} will receive score 0.", file=sys.stderr)
            continue
        prediction = predictions[qid]
        if not isinstance(prediction, str):
            raise ValueError(f"prediction for {qid!r} is not a string: {prediction!r}")
        try:
            exact_match += metric_max_over_ground_truths(
                exact_match_score, prediction, ground_truths
            )
            f1 += metric_max_over_ground_truths(f1_score, prediction, ground_truths)
        except ValueError as exc:
            raise ValueError(f"question {qid!r}: {exc}") from None
    if total == 0:
        raise ValueError(f"{source}: the dataset has no questions")
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def question_scores(prediction: str | None, example: SquadExample) -> tuple[float, float]:
    """``(f1, exact_match)`` of one question: the best over its gold answers; ``(0, 0)`` for a
    missing prediction (as the official script).

    Raises:
        ValueError: the example has no gold answers.
    """
    ground_truths = [answer.text for answer in example.answers]
    if not ground_truths:
        raise ValueError(f"example {example.qid!r} has no gold answers to score against")
    if prediction is None:
        return 0.0, 0.0
    return (
        float(metric_max_over_ground_truths(f1_score, prediction, ground_truths)),
        float(metric_max_over_ground_truths(exact_match_score, prediction, ground_truths)),
    )


class SquadMetric:
    """Accumulates SQuAD EM and F1 over batches during training or evaluation.

    ``update(predictions, examples)`` scores each example's prediction against all of its
    ``answers`` (a missing prediction scores 0); ``compute()`` returns fractions in [0, 1]:
    100 × these equal :func:`evaluate` on the same questions.

    >>> from tasks.squad.data import Answer, SquadExample
    >>> example = SquadExample("q1", "", "Paris", "Where?", ("Paris",), ((0, 5),), ("Where", "?"),
    ...                        (Answer("Paris", 0),), (0, 0))
    >>> metric = SquadMetric()
    >>> metric.update({"q1": "paris!"}, [example])
    >>> metric.compute()
    {'exact_match': 1.0, 'f1': 1.0}
    """

    def __init__(self) -> None:
        self.exact_match = 0.0  # sum over questions of the best EM (0 or 1)
        self.f1 = 0.0  # sum over questions of the best F1
        self.total = 0  # questions seen
        self.missing = 0  # of which had no prediction

    def update(self, predictions: Mapping[str, str], examples: Iterable[SquadExample]) -> None:
        """Add ``examples``, scored with ``predictions`` (question id → answer text).

        Raises:
            ValueError: an example without answers.
        """
        for example in examples:
            self.total += 1
            prediction = predictions.get(example.qid)
            if prediction is None:
                self.missing += 1
            f1, exact = question_scores(prediction, example)
            self.f1 += f1
            self.exact_match += exact

    def compute(self) -> dict[str, float]:
        """``{"exact_match", "f1"}`` as fractions in [0, 1] (0.0 before any update)."""
        if self.total == 0:
            return {"exact_match": 0.0, "f1": 0.0}
        return {"exact_match": self.exact_match / self.total, "f1": self.f1 / self.total}

    def reset(self) -> None:
        """Forget everything seen so far."""
        self.exact_match = self.f1 = 0.0
        self.total = self.missing = 0


#: Exact match as a fraction, shown in percent with one decimal (the second SQuAD column).
EM = MetricSpec("exact_match", label="EM", higher_is_better=True, scale=100.0, decimals=1)


def f1_from_totals(totals: Sequence[Column]) -> Column:
    """Mean F1 from the column sums of ``(f1, exact_match, 1)`` question rows (the recipe's
    unit statistics: :func:`question_scores` and a count); floats or ``(m,)`` arrays."""
    return safe_ratio(totals[0], totals[2])
