"""SRL instances from CoNLL-2012: one BIO instance per predicate, C-/R- labels kept."""

from __future__ import annotations

import pytest

from tasks.common.io import ReadStats
from tasks.srl.data import read_srl
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
