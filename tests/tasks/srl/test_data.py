"""SRL instances from CoNLL-2012: one BIO instance per predicate, C-/R- labels kept."""

from __future__ import annotations

import pytest

from tasks.common.conll2012 import Span
from tasks.common.io import ReadStats
from tasks.srl.data import bio_to_spans, read_srl, spans_to_bio, to_hf_dataset
from tests.conftest import shared_path

SRL_DIR = ("fixtures", "formats", "structured_prediction", "srl", "conll_2012")
COREF = ("fixtures", "formats", "coref", "coref.gold_conll")


@pytest.mark.shared
def test_instances_from_the_srl_samples() -> None:
    stats = ReadStats()
    instances = list(read_srl(shared_path(*SRL_DIR), stats))
    # predicates per sentence 2, 2, 0, 2 (subdomain) and 2 (subdomain2)
    assert len(instances) == stats.examples == 8
    assert dict(stats.skipped) == {"no_predicate_sentence": 1}
    assert [i.sentence_id for i in instances] == [0, 0, 1, 1, 3, 3, 4, 4]
    first = instances[0]
    assert first.predicate_index == 3 and first.tokens[3] == "say" and first.genre == "bn"
    assert first.tags == (
        "B-ARG0", "I-ARG0", "I-ARG0", "B-V", "B-ARG1", "I-ARG1", "I-ARG1", "I-ARG1", "I-ARG1",
        "I-ARG1", "O",
    )  # fmt: skip


@pytest.mark.shared
def test_continuation_and_reference_labels_are_kept() -> None:
    tags = {tag for instance in read_srl(shared_path(*COREF)) for tag in instance.tags}
    assert {"B-C-ARG1", "B-R-ARG1", "B-ARGM-TMP", "B-V"} <= tags


def test_spans_to_bio_drops_nested_spans() -> None:
    spans = [Span(0, 2, "A1"), Span(1, 1, "A2"), Span(3, 3, "V")]
    assert spans_to_bio(5, spans) == (("B-A1", "I-A1", "I-A1", "B-V", "O"), 1)


@pytest.mark.parametrize(
    ("tags", "spans"),
    [
        (["B-A0", "I-A0", "O", "B-V"], [Span(0, 1, "A0"), Span(3, 3, "V")]),
        (["I-A0", "I-A0", "B-A0"], [Span(0, 1, "A0"), Span(2, 2, "A0")]),  # I- after nothing
        (["B-A0", "I-A1", "I-A1"], [Span(0, 0, "A0"), Span(1, 2, "A1")]),  # I- of another label
        (["O", "I-C-A1"], [Span(1, 1, "C-A1")]),
        ([], []),
    ],
)
def test_bio_to_spans_is_lenient(tags: list[str], spans: list[Span]) -> None:
    assert bio_to_spans(tags) == spans


@pytest.mark.parametrize("bad", ["X-A0", "B-", "b-A0", ""])
def test_bio_to_spans_rejects_non_bio(bad: str) -> None:
    with pytest.raises(ValueError, match="BIO"):
        bio_to_spans(["O", bad])


@pytest.mark.shared
def test_to_hf_dataset() -> None:
    dataset = to_hf_dataset(shared_path(*SRL_DIR))
    assert dataset.num_rows == 8
    assert dataset[0]["tags"][3] == "B-V" and dataset[0]["predicate_index"] == 3
