"""srl-eval.pl semantics on hand-computed cases, including the traps (C- merged, R- kept, V out)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.common.io import DataError
from tasks.metrics.prf import PRF
from tasks.srl.metric import (
    Argument,
    PropsColumn,
    PropsSentence,
    evaluate_props,
    evaluate_props_files,
    proposition_from_tags,
    read_props,
    write_props,
)
from tests.tasks.helpers import assert_read_error


def sentence(*columns: tuple[int, str], verbs: tuple[str, ...] | None = None) -> PropsSentence:
    """A props sentence from ``(predicate position, "space separated tags")`` columns."""
    props = []
    for k, (position, tags) in enumerate(columns):
        verb = verbs[k] if verbs else "v"
        props.append(proposition_from_tags(verb, position, tags.split()))
    length = len(columns[0][1].split()) if columns else 1
    return PropsSentence(length, tuple(props))


def score(gold: PropsSentence, predicted: PropsSentence) -> tuple[PRF, dict[str, PRF]]:
    result = evaluate_props([gold], [predicted])
    return result.overall, dict(result.per_type)


def test_perfect_match_excludes_v() -> None:
    gold = sentence((1, "(A0*) (V*) (A1* *)"))
    result = evaluate_props([gold], [gold])
    assert result.overall == PRF.from_errors(correct=2)
    assert dict(result.excluded) == {"V": PRF.from_errors(correct=1)}
    assert "V" not in result.per_type
    assert (result.precision, result.recall, result.f1) == (100.0, 100.0, 100.0)
    assert result.perfect_propositions == 1


def test_wrong_v_does_not_count() -> None:
    gold = sentence((1, "(A0*) (V*) (A1* *)"))
    predicted = sentence((1, "(A0*) (V* *) (A1*)"))  # V (1,2) wrong, A1 (3,3) wrong
    overall, per_type = score(gold, predicted)
    # A0 correct; A1 excess + missed; V wrong only in the excluded table
    assert overall == PRF.from_errors(correct=1, excess=1, missed=1)
    result = evaluate_props([gold], [predicted])
    assert dict(result.excluded) == {"V": PRF.from_errors(excess=1, missed=1)}


def test_span_crossing_a_gold_boundary_gets_no_credit() -> None:
    # gold A0 = tokens 1-2, A1 = 3-5; the prediction moves the boundary: A0 = 1-3, A1 = 4-5.
    gold = sentence((0, "(V*) (A0* *) (A1* * *)"))
    predicted = sentence((0, "(V*) (A0* * *) (A1* *)"))
    overall, per_type = score(gold, predicted)
    assert overall == PRF.from_errors(correct=0, excess=2, missed=2)
    assert (overall.precision, overall.recall, overall.f1) == (0.0, 0.0, 0.0)
    assert per_type == {"A0": PRF.from_errors(0, 1, 1), "A1": PRF.from_errors(0, 1, 1)}


def test_continuation_is_merged_into_one_discontinuous_argument() -> None:
    gold = sentence((1, "(A1*) (V*) (C-A1*) (A0*)"))
    (proposition,) = gold.propositions
    assert proposition.arguments == (
        Argument("A1", 0, 2, ((0, 0), (2, 2))),
        Argument("V", 1, 1),
        Argument("A0", 3, 3),
    )
    # exact prediction: the A1 + C-A1 pair is ONE correct A1 (no C-A1 type in the table)
    overall, per_type = score(gold, gold)
    assert overall == PRF.from_errors(correct=2)
    assert per_type == {"A1": PRF.from_errors(correct=1), "A0": PRF.from_errors(correct=1)}
    # head piece only: a continuous A1 never matches the discontinuous gold A1
    overall, _ = score(gold, sentence((1, "(A1*) (V*) * (A0*)")))
    assert overall == PRF.from_errors(correct=1, excess=1, missed=1)  # P = R = F1 = 50
    assert overall.scores(100)[2] == pytest.approx(50.0)
    # both pieces as two plain A1 arguments: two excess, one missed
    overall, _ = score(gold, sentence((1, "(A1*) (V*) (A1*) (A0*)")))
    assert overall == PRF.from_errors(correct=1, excess=2, missed=1)
    # same pieces but a different third piece: all parts must match
    gold3 = sentence((1, "(A1*) (V*) (C-A1*) (C-A1*)"))
    overall, _ = score(gold3, sentence((1, "(A1*) (V*) * (C-A1*)")))
    assert overall == PRF.from_errors(correct=0, excess=1, missed=1)


def test_continuation_without_head_becomes_plain_argument() -> None:
    gold = sentence((1, "(C-A1*) (V*)"))
    assert gold.propositions[0].arguments[0] == Argument("A1", 0, 0)
    overall, per_type = score(gold, sentence((1, "(A1*) (V*)")))
    assert overall == PRF.from_errors(correct=1)
    assert per_type == {"A1": PRF.from_errors(correct=1)}


def test_reference_arguments_are_their_own_type() -> None:
    gold = sentence((2, "(A0*) (R-A0*) (V*)"))
    predicted = sentence((2, "(A0*) (A0*) (V*)"))
    overall, per_type = score(gold, predicted)
    assert overall == PRF.from_errors(correct=1, excess=1, missed=1)
    assert per_type == {
        "A0": PRF.from_errors(correct=1, excess=1),
        "R-A0": PRF.from_errors(missed=1),
    }


def test_missing_prediction_counts_all_gold_arguments_missed() -> None:
    gold = sentence((1, "(A0*) (V*) * (A1*)"), (3, "* * (A0*) (V*)"))
    predicted = sentence((1, "(A0*) (V*) * (A1*)"))  # second predicate not predicted
    result = evaluate_props([gold], [predicted])
    assert result.overall == PRF.from_errors(correct=2, missed=1)
    assert result.num_propositions == 2 and result.perfect_propositions == 1
    assert dict(result.excluded) == {"V": PRF.from_errors(correct=1, missed=1)}


def test_verb_mismatch_counts_gold_missed_and_ignores_prediction() -> None:
    gold = sentence((1, "(A0*) (V*) (A1*)"), verbs=("eat",))
    predicted = sentence((1, "(A0*) (V*) (A1*)"), verbs=("ate",))
    overall, _ = score(gold, predicted)
    assert overall == PRF.from_errors(correct=0, excess=0, missed=2)


def test_prediction_without_gold_is_skipped() -> None:
    gold = sentence((1, "(A0*) (V*) *"))
    predicted = sentence((1, "(A0*) (V*) *"), (2, "(A0*) * (V*)"))
    result = evaluate_props([gold], [predicted])
    assert result.overall == PRF.from_errors(correct=1)
    assert result.unmatched_predictions == 1


def test_nested_phrase_makes_its_parent_discontinuous() -> None:
    # srl-eval.pl keeps nested phrases as sub-phrases: A1 (0-2) then has the piece (1,1).
    gold = sentence((3, "(A1* (A2*) *) (V*)"))
    assert gold.propositions[0].arguments[0] == Argument("A1", 0, 2, ((1, 1),))
    overall, per_type = score(gold, sentence((3, "(A1* * *) (V*)")))
    assert per_type == {"A1": PRF.from_errors(excess=1, missed=1), "A2": PRF.from_errors(missed=1)}
    assert overall == PRF.from_errors(excess=1, missed=2)


def test_precision_recall_f1_over_sentences() -> None:
    # sentence 1: 2 correct, 1 excess; sentence 2: 1 correct, 1 excess, 1 missed
    gold = [sentence((0, "(V*) (A0*) (A1*) *")), sentence((1, "(A0*) (V*) (A1* *)"))]
    predicted = [sentence((0, "(V*) (A0*) (A1*) (A2*)")), sentence((1, "(A0*) (V*) (A1*) *"))]
    result = evaluate_props(gold, predicted)
    assert result.overall == PRF.from_errors(correct=3, excess=2, missed=1)
    # P = 3/5 = 60, R = 3/4 = 75, F1 = 2*60*75/135 = 66.67
    assert result.precision == pytest.approx(60.0)
    assert result.recall == pytest.approx(75.0)
    assert result.f1 == pytest.approx(200 / 3)
    assert result.num_sentences == 2


def test_misaligned_inputs_raise() -> None:
    one = sentence((0, "(V*) *"))
    with pytest.raises(ValueError, match="sentence count"):
        evaluate_props([one, one], [one])
    with pytest.raises(ValueError, match="tokens"):
        evaluate_props([one], [sentence((0, "(V*) * *"))])


@pytest.mark.parametrize("tags", ["A0*", "(A0* *", "*) *", "(A0* *A1)", "(A0 *"])
def test_malformed_start_end_tags(tags: str) -> None:
    with pytest.raises(ValueError):
        proposition_from_tags("v", 0, tags.split())


def test_props_file_round_trip_and_file_scoring(tmp_path: Path) -> None:
    gold_columns = [
        (5, [PropsColumn(1, "eat", ("(A0*)", "(V*)", "(A1*", "*)", "*"))]),
        (2, []),
        (
            3,
            [
                PropsColumn(2, "go", ("(A1*)", "(C-A1*)", "(V*)")),
                PropsColumn(0, "be", ("(V*)", "*", "*")),
            ],
        ),
    ]
    gold_path, pred_path = tmp_path / "gold.props", tmp_path / "pred.props"
    write_props(gold_path, gold_columns)
    lines = gold_path.read_text(encoding="utf-8").splitlines()
    assert lines[:6] == ["- (A0*)", "eat (V*)", "- (A1*", "- *)", "- *", ""]
    assert lines[9:12] == ["be (V*) (A1*)", "- * (C-A1*)", "go * (V*)"]
    sentences = list(read_props(gold_path))
    assert [s.length for s in sentences] == [5, 2, 3]
    assert [p.position for p in sentences[2].propositions] == [0, 2]
    predicted = [
        (5, [PropsColumn(1, "eat", ("(A0*)", "(V*)", "(A1*)", "*", "*"))]),
        (2, []),
        (3, [PropsColumn(2, "go", ("(A1*)", "(C-A1*)", "(V*)"))]),
    ]
    write_props(pred_path, predicted)
    result = evaluate_props_files(gold_path, pred_path)
    assert result.overall == PRF.from_errors(correct=2, excess=1, missed=1)
    assert result.num_sentences == 3 and result.num_propositions == 3


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("- (A0*)\nv (V*) *\n", 2, "expected 2 columns"),
        ("- (A0*)\n- (V*)\n", 1, "0 predicate rows but 1 argument"),
        ("v (A0*\n- *\n", 1, "unclosed"),
        ("v (V*)\n\n\nv (V*)\n", 3, "blank line"),
        ("\nv (V*)\n", 1, "blank line"),
        (b"v (V*)\n\xff\n", 2, "invalid UTF-8"),
    ],
)
def test_props_file_errors(tmp_path: Path, text: str | bytes, line: int, reason: str) -> None:
    path = tmp_path / "bad.props"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    assert_read_error(lambda: read_props(path), line, reason)


def test_props_file_trailing_blank_lines_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "ok.props"
    path.write_text("v (V*)\n- *\n\n\n\n", encoding="utf-8")
    assert [s.length for s in read_props(path)] == [2]


def test_write_props_rejects_unwritable_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="position"):
        write_props(tmp_path / "p", [(2, [PropsColumn(0, "a", ("(V*)", "*"))] * 2)])
    with pytest.raises(ValueError, match="tags"):
        write_props(tmp_path / "p", [(2, [PropsColumn(0, "a", ("(V*)",))])])
    with pytest.raises(ValueError, match="verb"):
        write_props(tmp_path / "p", [(1, [PropsColumn(0, "-", ("(V*)",))])])


_PROPS_PIECES = ["-", "v", "*", "(A0*", "*)", "(V*)", "(C-A1*)", "(R-A0*)", "(A1(A2*", "*))", "x"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(st.just(""), st.lists(st.sampled_from(_PROPS_PIECES), max_size=4).map(" ".join)),
        max_size=10,
    )
)
def test_fuzz_props_reader_only_data_error(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f.props"
        path.write_text("\n".join(lines), encoding="utf-8")
        try:
            for props in read_props(path):
                evaluate_props([props], [props])
        except DataError:
            pass
