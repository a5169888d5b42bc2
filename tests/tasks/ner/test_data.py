"""CoNLL-2003 reader and its failure modes (tag schemes: tests/tasks/common/test_spans.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.common.io import DataError
from tasks.ner.data import Conll2003Reader, to_hf_dataset
from tests.conftest import shared_path

SAMPLE = ("tagging", "conll2003.txt")


@pytest.mark.shared
def test_reader_on_real_format_sample() -> None:
    reader = Conll2003Reader(shared_path("fixtures", "formats", *SAMPLE))
    examples = list(reader)
    assert [(e.document_index, e.sentence_index) for e in examples] == [(0, 0), (1, 0)]
    first = examples[0]
    assert first.tokens == ("U.N.", "official", "Ekeus", "heads", "for", "Baghdad", ".")
    assert first.pos_tags[:2] == ("NNP", "NN")
    assert first.chunk_tags[:4] == ("I-NP", "I-NP", "I-NP", "I-VP")
    assert first.ner_tags == ("I-ORG", "O", "I-PER", "O", "O", "I-LOC", "O")
    assert all("-DOCSTART-" not in e.tokens for e in examples)  # DOCSTART is not a sentence
    assert reader.stats.examples == 2 and reader.documents == 2
    bioul = list(Conll2003Reader(shared_path("fixtures", "formats", *SAMPLE), scheme="BIOUL"))
    assert bioul[1].ner_tags == ("U-ORG", "O", "U-PER", "O", "O", "U-LOC", "O")


def test_documents_sentences_and_separators(tmp_path: Path) -> None:
    path = tmp_path / "mini.txt"
    path.write_text(
        "EU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"  # sentence before any -DOCSTART-: document 0
        "-DOCSTART- -X- -X- O\n\n"
        "Peter\tNNP\tI-NP\tI-PER\nBlackburn\tNNP\tI-NP\tI-PER\n\n\n"  # tabs, two blank lines
        "Paris NNP I-NP I-LOC\nLondon NNP I-NP B-LOC\n",  # no final blank line
        encoding="utf-8",
    )
    reader = Conll2003Reader(path, scheme="IOB2")
    examples = list(reader)
    assert [(e.document_index, e.sentence_index) for e in examples] == [(0, 0), (1, 0), (1, 1)]
    assert examples[1].ner_tags == ("B-PER", "I-PER")
    assert examples[2].ner_tags == ("B-LOC", "B-LOC")
    assert reader.stats.examples == 3 and reader.documents == 2


def test_to_hf_dataset(tmp_path: Path) -> None:
    path = tmp_path / "mini.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nsays VBZ I-VP O\n")
    dataset = to_hf_dataset(path, scheme="BIOUL")
    assert dataset.num_rows == 1
    assert dataset[0]["tokens"] == ["EU", "says"] and dataset[0]["ner_tags"] == ["U-ORG", "O"]


# Each corruption: file bytes, expected line of the DataError (None: whole file), reason fragment.
GOOD = b"-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"
CORRUPTIONS = {
    "three columns": (GOOD + b"German JJ I-MISC\n", 6, "4 columns"),
    "five columns": (GOOD + b"German JJ I-NP I-MISC O\n", 6, "4 columns"),
    "truncated last line": (GOOD + b"German JJ I-NP I-MISC\ncall NN", 7, "4 columns"),
    "invalid utf-8": (GOOD + b"M\xfcller NNP I-NP I-PER\n", 6, "UTF-8"),
    "empty file": (b"", None, "empty"),
    "unknown tag prefix": (GOOD + b"German JJ I-NP X-MISC\n", 6, "NER tag"),
    "tag without type": (GOOD + b"German JJ I-NP B-\n", 6, "NER tag"),
    "tag without prefix": (GOOD + b"German JJ I-NP MISC\n", 6, "NER tag"),
    "BIOUL tag in IOB1 file": (b"German JJ I-NP U-MISC\n", 1, "NER tag"),
    "lower-case outside tag": (b"EU NNP I-NP I-ORG\nsays VBZ I-VP o\n", 2, "NER tag"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corruption_raises_located_data_error(tmp_path: Path, name: str) -> None:
    content, line, reason = CORRUPTIONS[name]
    path = tmp_path / "corrupt.txt"
    path.write_bytes(content)
    with pytest.raises(DataError) as info:
        list(Conll2003Reader(path))
    assert info.value.line == line and reason in info.value.reason
    assert info.value.path == str(path)


def test_missing_file_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no such file"):
        list(Conll2003Reader(tmp_path / "absent.txt"))


FUZZ_ALPHABET = ["-DOCSTART-", "EU", "NNP", "I-NP", "O", "I-PER", "B-LOC", "U-X", " ", "\t", "\n"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.one_of(
        st.binary(max_size=200),
        st.lists(st.sampled_from(FUZZ_ALPHABET), max_size=40).map(lambda x: "".join(x).encode()),
    )
)
def test_fuzz_reader_raises_only_data_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.txt"
    path.write_bytes(data)
    try:
        for example in Conll2003Reader(path, scheme="BIOUL"):
            assert len(example.tokens) == len(example.ner_tags) > 0
    except DataError:
        pass
