"""CoNLL-2012 reader: real samples, synthetic edge cases, a corruption corpus, a fuzz test."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.common.conll2012 import (
    Span,
    conll_files,
    parse_begin_document,
    read_documents,
    read_sentences,
)
from tasks.common.io import DataError
from tasks.common.spans import spans_to_brackets
from tests.conftest import shared_path

COREF = ("fixtures", "formats", "coref", "coref.gold_conll")
SRL_DIR = ("fixtures", "formats", "structured_prediction", "srl", "conll_2012")


def _row(
    index: int, word: str, *, srl: tuple[str, ...] = (), coref: str = "-", ne: str = "*"
) -> str:
    """One synthetic token line: 11 fixed columns, the SRL columns, the coreference column."""
    fixed = ["nw/x/00/x_0000", "0", str(index), word, "NN", "*", "-", "-", "-", "spk", ne]
    return "  ".join([*fixed, *srl, coref])


def _write(tmp_path: Path, text: str | bytes, name: str = "x.gold_conll") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


BEGIN = "#begin document (nw/x/00/x_0000); part 000"
END = "#end document"


# --------------------------------------------------------------------------------------------------
# real-format samples (../shared)


@pytest.mark.shared
def test_coref_sample_counts_and_clusters() -> None:
    documents = list(read_documents(shared_path(*COREF)))
    # README of the samples: 4 parts of bc/cctv/00/cctv_0000, 9 sentences, 173 tokens
    assert [d.key for d in documents] == [("bc/cctv/00/cctv_0000", p) for p in (0, 1, 3, 5)]
    assert sum(len(d.sentences) for d in documents) == 9
    assert sum(d.num_tokens for d in documents) == 173
    assert {d.genre for d in documents} == {"bc"}
    first = documents[0]
    # cluster 23 ("Hong Kong" twice) is seen first, then 18 ("their", "these ... images")
    assert first.cluster_ids == (23, 18)
    assert first.clusters == (((23, 24), (41, 42)), ((28, 28), (32, 37)))
    # part 003: mention (27, 31) of cluster 44 contains (28, 29) of cluster 6 (nested mentions)
    part3 = documents[2]
    assert part3.cluster_ids == (6, 44)
    assert (27, 31) in part3.clusters[1] and (29, 30) in part3.clusters[0]
    assert part3.sentences[1].start == 14  # document-level offsets
    assert first.sentences[0].speakers[0] == "Speaker#1"


@pytest.mark.shared
def test_coref_sample_srl_labels_kept() -> None:
    sentences = list(read_sentences(shared_path(*COREF)))
    second = sentences[1]  # "With their unique charm , these well - known cartoon images ..."
    known = second.srl_frames[0]
    assert known.predicate_index == 8
    assert Span(9, 9, "ARG1") in known.arguments and Span(10, 10, "C-ARG1") in known.arguments
    r_args = [s for sentence in sentences for f in sentence.srl_frames for s in f.arguments]
    assert Span(5, 5, "R-ARG1") in r_args
    assert Span(3, 3, "ORDINAL") in sentences[2].named_entities  # "(ORDINAL)" without "*"
    assert second.predicate_lemmas[8] == "know" and second.framesets[8] == "01"


@pytest.mark.shared
def test_srl_directory_is_read_recursively_in_sorted_order() -> None:
    root = shared_path(*SRL_DIR)
    files = conll_files(root)
    assert [f.parent.name for f in files] == ["subdomain", "subdomain2"]
    documents = list(read_documents(root))
    # the header id wins over column 1 (test/test/01/test_001)
    assert [d.document_id for d in documents] == ["bn/cnn/01/cnn_0115"] * 2
    assert [len(d.sentences) for d in documents] == [4, 1]
    assert [d.num_tokens for d in documents] == [44, 15]
    frames = [[len(s.srl_frames) for s in d.sentences] for d in documents]
    assert frames == [[2, 2, 0, 2], [2]]
    first = documents[0].sentences[0]
    assert first.words[:3] == ("Mali", "government", "officials")
    assert first.named_entities == (Span(0, 0, "GPE"),)
    assert first.srl_frames[0].predicate_index == 3
    assert first.srl_frames[0].arguments == (
        Span(0, 2, "ARG0"),
        Span(3, 3, "V"),
        Span(4, 9, "ARG1"),
    )
    # "(1|(3" on token 4; cluster 2 spans three sentences (offsets 11, 24); "(14)" on token 35
    assert documents[0].clusters == (
        ((4, 6),),
        ((4, 7),),
        ((11, 12), (14, 14), (24, 25)),
        ((35, 35),),
    )


@pytest.mark.shared
@pytest.mark.parametrize("parts", [COREF, SRL_DIR])
def test_bracket_writer_reproduces_every_srl_column(parts: tuple[str, ...]) -> None:
    path = shared_path(*parts)
    raw: list[list[list[str]]] = []  # per sentence, per line, columns
    for file in conll_files(path):
        block: list[list[str]] = []
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                block.append(line.split())
            elif block:
                raw.append(block)
                block = []
    sentences = list(read_sentences(path))
    assert len(raw) == len(sentences)
    for rows, sentence in zip(raw, sentences, strict=True):
        for k, frame in enumerate(sentence.srl_frames):
            column = [row[11 + k] for row in rows]
            assert spans_to_brackets(len(sentence), frame.arguments) == column


# --------------------------------------------------------------------------------------------------
# synthetic edge cases


def test_nested_multi_and_shared_token_mentions(tmp_path: Path) -> None:
    lines = [
        BEGIN,
        _row(0, "a", coref="(1|(2"),  # 1 and 2 open together
        _row(1, "b", coref="(1)"),  # nested single-token mention of the same cluster
        _row(2, "c", coref="1)|(3)"),
        _row(3, "d", coref="2)"),
        "",
        _row(0, "e", coref="(2)"),
        END,
    ]
    (document,) = read_documents(_write(tmp_path, "\n".join(lines) + "\n"))
    # scorer order: cluster 1 first (seen first); mentions in completion order
    assert document.cluster_ids == (1, 2, 3)
    assert document.clusters == (((1, 1), (0, 2)), ((0, 3), (4, 4)), ((2, 2),))
    assert [s.start for s in document.sentences] == [0, 4]


def test_sentence_without_predicates_blank_lines_and_empty_part(tmp_path: Path) -> None:
    lines = [
        "",
        BEGIN,
        _row(0, "run", srl=("(V*)",)),
        _row(1, "fast", srl=("(ARGM-MNR*)",)),
        "",
        "",
        _row(0, "hi"),
        "",
        END,
        "",
        "#begin document (nw/x/00/x_0000); part 001",
        END,
    ]
    documents = list(read_documents(_write(tmp_path, "\r\n".join(lines))))
    assert [len(d.sentences) for d in documents] == [2, 0]
    assert documents[0].sentences[1].srl_frames == ()
    assert documents[0].sentences[0].srl_frames[0].arguments == (
        Span(0, 0, "V"),
        Span(1, 1, "ARGM-MNR"),
    )


def test_frame_without_v_and_nested_srl_spans(tmp_path: Path) -> None:
    lines = [
        BEGIN,
        _row(0, "a", srl=("(ARG1*", "(ARG0*)")),
        _row(1, "b", srl=("(ARG2*)", "*")),
        _row(2, "c", srl=("*ARG1)", "*")),
        END,
    ]
    (sentence,) = read_sentences(_write(tmp_path, "\n".join(lines)))
    nested, no_v = sentence.srl_frames
    assert nested.arguments == (Span(0, 2, "ARG1"), Span(1, 1, "ARG2"))
    assert no_v.predicate_index is None and nested.predicate_index is None


def test_parse_begin_document() -> None:
    assert parse_begin_document("#begin document (bc/cctv/00/cctv_0000); part 003") == (
        "bc/cctv/00/cctv_0000",
        3,
    )
    assert parse_begin_document("#begin document bc/cctv/00/cctv_0000") is None


def test_spans_to_brackets_nesting_and_crossing() -> None:
    spans = [Span(0, 3, "A1"), Span(0, 0, "A2"), Span(2, 3, "A3")]
    assert spans_to_brackets(4, spans) == ["(A1(A2*)", "*", "(A3*", "*))"]
    with pytest.raises(ValueError, match="cross"):
        spans_to_brackets(4, [Span(0, 2, "A"), Span(1, 3, "B")])
    with pytest.raises(ValueError, match="outside"):
        spans_to_brackets(2, [Span(1, 2, "A")])


# --------------------------------------------------------------------------------------------------
# corruption corpus: each kind names its file and line

GOOD_ROW = _row(0, "a", srl=("(V*)",))
CORRUPTIONS: dict[str, tuple[str | bytes, int | None, str]] = {
    "column count within a sentence": (
        "\n".join([BEGIN, GOOD_ROW, _row(1, "b"), END]),
        3,
        "expected 13 columns as on line 2",
    ),
    "too few columns": ("\n".join([BEGIN, "a b c d e", END]), 2, "at least 12 columns"),
    "SRL closed but never opened": (
        "\n".join([BEGIN, _row(0, "a", srl=("*)",)), END]),
        2,
        "closed but never opened",
    ),
    "SRL never closed": (
        "\n".join([BEGIN, _row(0, "a", srl=("(ARG0*",)), _row(1, "b", srl=("*",)), "", END]),
        3,
        "opened on line 2 is never closed",
    ),
    "SRL closing label mismatch": (
        "\n".join([BEGIN, _row(0, "a", srl=("(ARG0*",)), _row(1, "b", srl=("*ARG1)",)), END]),
        3,
        "closed as 'ARG1'",
    ),
    "malformed SRL tag": ("\n".join([BEGIN, _row(0, "a", srl=("ARG0",)), END]), 2, "malformed SRL"),
    "named entity never closed": (
        "\n".join([BEGIN, _row(0, "a", ne="(GPE*"), END]),
        2,
        "named-entity span 'GPE'",
    ),
    "coreference closed but never opened": (
        "\n".join([BEGIN, _row(0, "a", coref="7)"), END]),
        2,
        "cluster 7 closed but never opened",
    ),
    "coreference never closed": (
        "\n".join([BEGIN, _row(0, "a", coref="(7"), "", _row(0, "b"), END]),
        5,
        "opened on line 2 is never closed",
    ),
    "malformed coreference tag": (
        "\n".join([BEGIN, _row(0, "a", coref="(7|x"), END]),
        2,
        "malformed coreference tag",
    ),
    "missing #end document": ("\n".join([BEGIN, GOOD_ROW, ""]), 2, "missing #end document"),
    "#begin inside a document": ("\n".join([BEGIN, GOOD_ROW, BEGIN, END]), 3, "inside document"),
    "text outside a document": ("\n".join([GOOD_ROW, BEGIN, END]), 1, "outside a document"),
    "#end without #begin": ("\n".join([BEGIN, END, END]), 3, "without #begin"),
    "malformed header": ("#begin document nw/x; part 0\n" + END, 1, "outside a document"),
    "stray comment": ("\n".join([BEGIN, "# note", END]), 2, "unexpected comment"),
    "word index not an integer": (
        "\n".join([BEGIN, GOOD_ROW.replace("  0  a", "  x  a"), END]),
        2,
        "word index",
    ),
    "invalid UTF-8": (
        (BEGIN + "\n").encode()
        + GOOD_ROW.encode().replace(b"a", b"\xff", 1)
        + b"\n"
        + END.encode(),
        2,
        "invalid UTF-8",
    ),
    "empty file": (b"", None, "empty file"),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_corruption_raises_data_error_with_line(tmp_path: Path, kind: str) -> None:
    text, line, reason = CORRUPTIONS[kind]
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as info:
        list(read_documents(path))
    assert info.value.path == str(path)
    assert info.value.line == line
    assert reason in info.value.reason


def test_directory_without_conll_files_and_missing_path(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match="no \\*_conll file"):
        list(read_documents(tmp_path))
    with pytest.raises(DataError, match="no such file"):
        list(read_documents(tmp_path / "absent_conll"))


def test_error_in_second_file_of_a_directory_names_that_file(tmp_path: Path) -> None:
    good = "\n".join([BEGIN, GOOD_ROW, END]) + "\n"
    _write(tmp_path, good, "a_conll")
    (tmp_path / "sub").mkdir()
    bad = _write(tmp_path / "sub", "\n".join([BEGIN, GOOD_ROW]), "b_conll")
    reader = read_documents(tmp_path)
    assert next(reader).path.endswith("a_conll")
    with pytest.raises(DataError) as info:
        next(reader)
    assert info.value.path == str(bad) and info.value.line == 2


# --------------------------------------------------------------------------------------------------
# fuzz: random documents never crash with anything but DataError

_SRL_TAGS = ["*", "*", "*", "(ARG0*", "*)", "(V*)", "(A*)", "(GPE)", "x", "-", "(C-A1*"]
_COREF_TAGS = ["-", "-", "-", "(1", "1)", "(1)", "(2|(1", "2)|1)", "1)|(1", "(x", "3)", "(2)"]
_ROW = st.builds(
    lambda srl, coref, ne: _row(0, "w", srl=tuple(srl), coref=coref, ne=ne),
    st.lists(st.sampled_from(_SRL_TAGS), min_size=1, max_size=1),
    st.sampled_from(_COREF_TAGS),
    st.sampled_from(["*", "(GPE)", "(DATE*", "*)"]),
)
_LINE = st.one_of(
    st.just(BEGIN),
    st.just(END),
    st.just(""),
    _ROW,
    _ROW,
    st.just("#comment"),
    st.lists(st.sampled_from(_SRL_TAGS + _COREF_TAGS + ["0", "w"]), max_size=14).map(" ".join),
    st.text(max_size=30),
)
# mostly well-formed documents, so that successful reads are exercised too
_LIKELY_ROW = st.builds(
    lambda srl, coref: _row(0, "w", srl=(srl,), coref=coref),
    st.sampled_from(["*"] * 8 + ["(V*)", "(A*)", "(ARG0*", "*)"]),
    st.sampled_from(["-"] * 6 + ["(1)", "(1", "1)", "(2|(1", "2)|1)", "(3)"]),
)
_DOCUMENT = st.lists(st.one_of(_LIKELY_ROW, _LIKELY_ROW, st.just("")), max_size=10).map(
    lambda rows: [BEGIN, *rows, END]
)


@settings(max_examples=150, deadline=None)
@given(
    lines=st.one_of(st.lists(_LINE, max_size=12), _DOCUMENT),
    raw=st.binary(max_size=40),
    use_raw=st.booleans(),
)
def test_fuzz_only_data_error(lines: list[str], raw: bytes, use_raw: bool) -> None:
    data = raw if use_raw else "\n".join(lines).encode("utf-8", "surrogatepass")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "f_conll"
        path.write_bytes(data)
        try:
            for document in read_documents(path):
                for sentence in document.sentences:
                    assert len(sentence.words) == len(sentence.speakers)
        except DataError:
            pass
