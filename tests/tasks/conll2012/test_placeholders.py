"""CoNLL-2012 reader variants: LitBank's ``_`` placeholders and empty coreference fields
(tab-separated), OntoNotes' ``-``/``*`` (unchanged), the reported :class:`ConllStyle`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.common.conll2012 import ConllStyle, Span, conll_files, read_documents
from tasks.common.io import DataError
from tests.tasks.helpers import assert_read_error, write_lines

DOC = "1_some_novel_brat"


def _litbank_row(index: int, word: str, coref: str = "") -> str:
    """A LitBank token line: 4 columns, eight ``_``, the coreference field (empty: none)."""
    return "\t".join([DOC, "0", str(index), word, *["_"] * 8, coref])


def _litbank(tmp_path: Path, name: str = "a.conll") -> Path:
    rows = [
        f"#begin document ({DOC}); part 0",
        _litbank_row(0, "Mr.", "(0"),
        _litbank_row(1, "Holmes", "0)"),
        _litbank_row(2, "saw"),
        _litbank_row(3, "London", "(1)"),
        _litbank_row(4, "."),
        "",
        _litbank_row(5, "He", "(0)"),
        _litbank_row(6, "left"),
        _litbank_row(7, "the", "(2"),
        _litbank_row(8, "room", "2)"),
        "",
        "#end document",
    ]
    return write_lines(tmp_path / name, rows)


def test_underscore_placeholders_and_empty_coreference(tmp_path: Path) -> None:
    (document,) = read_documents(_litbank(tmp_path))
    assert document.key == (DOC, 0) and document.num_tokens == 9
    assert [len(s) for s in document.sentences] == [5, 4]
    # "Mr. Holmes" ... "He" one chain; "London" and "the room" singletons
    assert document.clusters == (((0, 1), (5, 5)), ((3, 3),), ((7, 8),))
    assert document.cluster_ids == (0, 1, 2)
    first = document.sentences[0]
    assert first.words == ("Mr.", "Holmes", "saw", "London", ".")
    assert first.pos_tags == ("_",) * 5 and first.speakers == ("_",) * 5  # verbatim
    assert first.named_entities == ()
    # the eighth `_` column is one (empty) argument column
    assert len(first.srl_frames) == 1 and first.srl_frames[0].arguments == ()
    assert document.style == ConllStyle(frozenset({"tab"}), frozenset({"_"}), True)
    assert document.style.describe() == (
        "tab-separated, '_' placeholders, empty coreference field = no mention"
    )


def test_dash_placeholders_parse_as_before(tmp_path: Path) -> None:
    fixed = ["nw/x/00/x_0000", "0"]
    rows = [
        "#begin document (nw/x/00/x_0000); part 000",
        "  ".join(
            [*fixed, "0", "John", "NNP", "(TOP(S(NP*)", "-", "-", "-", "-", "(PERSON)"]
            + ["(ARG0*)", "(0)"]
        ),
        "  ".join(
            [*fixed, "1", "left", "VBD", "(VP*", "leave", "01", "1", "-", "*"] + ["(V*)", "-"]
        ),
        "  ".join(
            [*fixed, "2", "him", "PRP", "(NP*))))", "-", "-", "-", "-", "*"] + ["(ARG1*)", "(0)"]
        ),
        "",
        "#end document",
    ]
    (document,) = read_documents(write_lines(tmp_path / "x.gold_conll", rows))
    sentence = document.sentences[0]
    assert document.clusters == (((0, 0), (2, 2)),)
    assert sentence.named_entities == (Span(0, 0, "PERSON"),)
    frame = sentence.srl_frames[0]
    assert frame.predicate_index == 1
    assert frame.arguments == (Span(0, 0, "ARG0"), Span(1, 1, "V"), Span(2, 2, "ARG1"))
    assert sentence.predicate_lemmas == ("-", "leave", "-")
    assert document.style.describe() == "space-separated, '-' and '*' placeholders"
    assert not document.style.empty_coreference


def test_placeholders_in_bracket_and_coreference_columns(tmp_path: Path) -> None:
    # `_` or `-` in the NE and argument columns mean "*"; `_` in the coreference column: none
    rows = [
        "#begin document (d); part 0",
        "d 0 0 A _ _ _ _ _ _ - (ARG0*) _",
        "d 0 1 b _ _ _ _ _ _ (ORG) - (0)",
        "d 0 2 c _ _ _ _ _ _ _ (V*) -",
        "",
        "#end document",
    ]
    (document,) = read_documents(write_lines(tmp_path / "d.conll", rows))
    sentence = document.sentences[0]
    assert sentence.named_entities == (Span(1, 1, "ORG"),)
    assert sentence.srl_frames[0].arguments == (Span(0, 0, "ARG0"), Span(2, 2, "V"))
    assert document.clusters == (((1, 1),),)
    assert document.style.placeholders == frozenset({"_", "-"})
    assert document.style.separators == frozenset({"space"})


def test_tab_line_with_an_empty_inner_cell(tmp_path: Path) -> None:
    row = _litbank_row(0, "A", "(0)").replace("\t_\t", "\t\t", 1)
    path = write_lines(tmp_path / "bad.conll", [f"#begin document ({DOC}); part 0", row])
    assert_read_error(lambda: read_documents(path), 2, "column 5 is empty")


def test_tab_line_coreference_errors_name_the_line(tmp_path: Path) -> None:
    rows = [f"#begin document ({DOC}); part 0", _litbank_row(0, "A", "(0"), "", "#end document"]
    path = write_lines(tmp_path / "open.conll", rows)
    assert_read_error(lambda: read_documents(path), 4, "opened on line 2 is never closed")
    rows[1] = _litbank_row(0, "A", "(x)")
    path = write_lines(tmp_path / "bad.conll", rows)
    assert_read_error(lambda: read_documents(path), 2, "malformed coreference tag")


def test_folders_of_dot_conll_files(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    for name in ("2.conll", "1.conll"):
        _litbank(tmp_path / "b", name)
    assert [p.name for p in conll_files(tmp_path / "b")] == ["1.conll", "2.conll"]
    assert len(list(read_documents(tmp_path / "b"))) == 2
    (tmp_path / "b" / "x.gold_conll").write_text("", encoding="utf-8")
    assert [p.name for p in conll_files(tmp_path / "b")] == ["x.gold_conll"]  # *_conll first
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no \*_conll file \(nor any \*\.conll file\)"):
        conll_files(tmp_path / "empty")


def test_style_combine_and_describe() -> None:
    litbank = ConllStyle(frozenset({"tab"}), frozenset({"_"}), True)
    ontonotes = ConllStyle(frozenset({"space"}), frozenset({"*", "-"}), False)
    both = ConllStyle.combine([litbank, ontonotes])
    assert both == ConllStyle(frozenset({"space", "tab"}), frozenset({"-", "_", "*"}), True)
    assert both.describe() == (
        "space and tab-separated, '-' and '_' and '*' placeholders, "
        "empty coreference field = no mention"
    )
    assert ConllStyle.combine([]).describe() == "no placeholders"
