"""Each reader reads the variants of its format that the reference tool for that format reads
(allennlp's ``conll2003``, ``Ontonotes``/``srl``, ``snli`` and ``squad`` readers), giving what the
plain file gives, and still refuses what its task cannot use, with the file and line.

Coreference (other annotations in CoNLL-2012's middle columns) and SST-5 (a no-break space inside
a leaf) have their own tests: tests/tasks/coref/test_foreign_columns.py, tests/tasks/sst5/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.common.io import DataError
from tasks.ner.config import NerConfig
from tasks.ner.data import Conll2003Reader, load_splits, read_columns
from tasks.snli.data import SnliReader, pair_reader, pair_tokens
from tasks.squad.data import read_squad
from tasks.srl.data import load_splits as load_srl_splits
from tasks.srl.data import read_srl
from tests.tasks.helpers import assert_read_error, write_lines

NBSP = "\u00a0"


def _error_at(read: object, path: Path, line: int, reason: str) -> None:
    """Reading raises a :class:`DataError` printed as ``path:line: ...reason...``."""
    with pytest.raises(DataError) as info:
        list(read)  # type: ignore[call-overload]
    assert str(info.value).startswith(f"{path}:{line}: ") and reason in str(info.value)


# ---------------------------------------------------------------- NER (CoNLL-2003)
#: (word, POS, chunk, NER) of two sentences; a ``None`` row ends a sentence.
NER_ROWS = [
    ("EU", "NNP", "I-NP", "I-ORG"),
    ("rejects", "VBZ", "I-VP", "O"),
    (f"New{NBSP}York", "NNP", "I-NP", "I-LOC"),  # a no-break space inside the word
    None,
    ("Peter", "NNP", "I-NP", "I-PER"),
    ("Blackburn", "NNP", "I-NP", "I-PER"),
    None,
]


def _ner_lines(separator: str, docstart: str, extra: str | None = None, tail: str = "") -> list:
    """The document: ``docstart`` first, columns joined by ``separator``, each token line ending
    in ``tail``; ``extra`` adds a column of other annotations before the NER tag."""
    lines = [docstart, ""]
    for row in NER_ROWS:
        if row is None:
            lines.append("")
            continue
        columns = [*row[:3], extra, row[3]] if extra is not None else list(row)
        lines.append(separator.join(columns) + tail)
    return lines


def test_ner_reads_tabs_trailing_spaces_filler_docstart_and_extra_columns(tmp_path: Path) -> None:
    """Tab-separated columns keep a no-break space inside a word; a trailing space, a
    ``-DOCSTART-`` line with other filler columns and a column of other annotations (before the
    tag, or after it with ``tag_column``) read as in the plain file."""
    expected_tokens = [("EU", "rejects", f"New{NBSP}York"), ("Peter", "Blackburn")]
    expected_tags = [("I-ORG", "O", "I-LOC"), ("I-PER", "I-PER")]
    tabbed = write_lines(
        tmp_path / "eng.train", _ner_lines("\t", "-DOCSTART-\t-X-\t-X-\tO", tail=" ")
    )
    for path, column in [
        (tabbed, -1),
        (write_lines(tmp_path / "a.txt", _ner_lines("\t", "-DOCSTART- -X- O", "(MISC)")), -1),
    ]:
        sentences = list(read_columns(path, column))
        assert [s.tokens for s in sentences] == expected_tokens, path.name
        assert [s.tags for s in sentences] == expected_tags, path.name
    # space-separated, two trailing spaces (a space-separated word holds no space)
    lines = [line.replace(NBSP, "-") for line in _ner_lines(" ", "-DOCSTART-", "*", tail="  ")]
    sentences = list(read_columns(write_lines(tmp_path / "b.txt", lines)))
    assert sentences[0].tokens[2] == "New-York" and [s.tags for s in sentences] == expected_tags
    # NER, then another column: name the tag column
    after = [
        "\t".join([*line.split("\t"), "x"]) if "\t" in line else line
        for line in _ner_lines("\t", "-DOCSTART-\t-X-\t-X-\tO")
    ]
    sentences = list(read_columns(write_lines(tmp_path / "c.txt", after), 3))
    assert [s.tags for s in sentences] == expected_tags
    # the CoNLL-2003 reader and a data folder read the tab-separated file the same way
    (example, second) = Conll2003Reader(tabbed)
    assert example.tokens == expected_tokens[0] and example.pos_tags == ("NNP", "VBZ", "NNP")
    assert second.ner_tags == expected_tags[1]
    write_lines(tmp_path / "eng.testa", _ner_lines("\t", "-DOCSTART-\t-X-\t-X-\tO"))
    splits, stats = load_splits(NerConfig(), str(tmp_path), demo=lambda: tmp_path)
    assert [s.tokens for s in splits["dev"]] == expected_tokens
    assert "-DOCSTART- present (1)" in stats["train"].variant
    # still strict: a missing column is located, the no-break space being no separator
    bad = write_lines(tmp_path / "d.txt", ["EU\tNNP\tI-NP\tI-ORG", f"New{NBSP}York\tNNP\tI-LOC"])
    assert_read_error(lambda: read_columns(bad), 2, "3 columns, but the first token line")


# ---------------------------------------------------------------- SRL (CoNLL-2012 v4 gold_conll)
SRL_DOC = "nw/wsj/00/wsj_0001"
#: word, POS, predicate lemma, frameset, then the named-entity, SRL and coreference cells.
SRL_ROWS = [
    ("John", "NNP", "-", "-", "(PERSON)", "(ARG0*)", "(0)"),
    ("sold", "VBD", "sell", "01", "*", "(V*)", "-"),
    ("the", "DT", "-", "-", "*", "(ARG1*", "(1"),
    ("farm", "NN", "-", "-", "*", "*)", "1)"),
    (".", ".", "-", "-", "*", "*", "-"),
]
#: Other annotations in the named-entity and coreference columns (SRL reads neither).
FOREIGN_NE = ["B-PER", "O", "PERSON", "(ORG", "x)"]
FOREIGN_COREF = ["e1", "e1", "B-ENT", "(7", "?"]


def _srl_file(
    path: Path, ne: list[str] | None = None, coref: list[str] | None = None, tab: bool = False
) -> Path:
    rows = [f"#begin document ({SRL_DOC}); part 000"]
    for i, (word, pos, lemma, frameset, ne_cell, srl, coref_cell) in enumerate(SRL_ROWS):
        cells = [SRL_DOC, "0", str(i), word, pos, "(TOP*)" if i == 0 else "*", lemma, frameset]
        cells += [
            "-",
            "Speaker#1",
            ne[i] if ne else ne_cell,
            srl,
            coref[i] if coref else coref_cell,
        ]
        rows.append(("\t" if tab else "   ").join(cells))
    rows += ["", "#end document"]
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_lines(path, rows)


def test_srl_reads_other_annotations_in_the_named_entity_and_coreference_columns(
    tmp_path: Path,
) -> None:
    (plain,) = read_srl(_srl_file(tmp_path / "plain.v4_gold_conll"))
    assert plain.predicate_index == 1
    assert plain.tags == ("B-ARG0", "B-V", "B-ARG1", "I-ARG1", "O")
    for name, ne, coref, tab in [
        ("ne", FOREIGN_NE, None, False),
        ("coref", None, FOREIGN_COREF, False),
        ("both", FOREIGN_NE, FOREIGN_COREF, True),
    ]:
        path = _srl_file(tmp_path / f"{name}.v4_gold_conll", ne, coref, tab)
        assert list(read_srl(path)) == [plain], name
    # the run's path: split folders of gold_conll files
    for split in ("train", "development"):
        _srl_file(tmp_path / "data" / split / "a.v4_gold_conll", FOREIGN_NE, FOREIGN_COREF)
    _, instances, stats = load_srl_splits(tmp_path / "data", None)
    assert instances["train"] == instances["dev"]
    assert [i.tags for i in instances["train"]] == [plain.tags]
    assert stats["train"].examples == 1


def test_srl_still_refuses_a_malformed_srl_cell_with_file_and_line(tmp_path: Path) -> None:
    path = _srl_file(tmp_path / "a.v4_gold_conll", FOREIGN_NE, FOREIGN_COREF)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3].replace("(ARG1*", "(ARG1*)*")  # line 4: "the"
    bad = write_lines(tmp_path / "b.v4_gold_conll", lines)
    _error_at(read_srl(bad), bad, 4, "malformed SRL tag '(ARG1*)*'")
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace("(V*)", "(V*")  # line 3: "sold", never closed
    bad = write_lines(tmp_path / "c.v4_gold_conll", lines)
    _error_at(read_srl(bad), bad, 6, "span 'V' opened on line 3 is never closed")


# ---------------------------------------------------------------- SNLI 1.0 jsonl
def _snli_record(number: int, **changes: object) -> dict[str, object]:
    record: dict[str, object] = {
        "annotator_labels": ["neutral", "entailment"],
        "captionID": f"3416050480.jpg#{number}",
        "gold_label": "entailment",
        "pairID": f"3416050480.jpg#{number}r1e",
        "sentence1": "A person on a horse jumps over a broken down airplane.",
        "sentence1_binary_parse": "( ( A person ) ( jumps ( over airplane ) ) )",
        "sentence1_parse": "(ROOT (S (NP (DT A) (NN person)) (VP (VBZ jumps))))",
        "sentence2": "A person is outdoors, on a horse.",
        "sentence2_binary_parse": "( ( A person ) ( is outdoors ) )",
        "sentence2_parse": "(ROOT (S (NP (DT A) (NN person)) (VP (VBZ is))))",
    }
    record.update(changes)
    return record


def test_snli_ignores_extra_keys_and_reads_extra_and_unicode_spaces(tmp_path: Path) -> None:
    spaced = f"A  man\u2009in a{NBSP}hat\u3000sleeps . "
    lines = [
        json.dumps(_snli_record(0)),
        "  " + json.dumps(_snli_record(1, gold_label="-"), indent=None) + " \t",  # skipped
        json.dumps(
            _snli_record(2, sentence1=spaced, sentence1_binary_parse=None), ensure_ascii=False
        )
        + "   ",
        json.dumps(
            _snli_record(3, sentence2=f"{NBSP}A dog.\u2028", extra={"a": [1]}), ensure_ascii=False
        )
        + "\r",
    ]
    path = write_lines(tmp_path / "snli_1.0_dev.jsonl", lines)
    reader = SnliReader(path)
    examples = list(reader)
    assert [e.pair_id for e in examples] == ["3416050480.jpg#0r1e", "3416050480.jpg#2r1e"] + [
        "3416050480.jpg#3r1e"
    ]
    assert reader.stats.skipped == {"no gold label": 1}
    assert examples[0].premise_tokens == ("A", "person", "jumps", "over", "airplane")
    assert examples[1].premise == spaced  # kept as given; tokens split at the Unicode spaces
    assert pair_tokens(examples[1])[0] == ("A", "man", "in", "a", "hat", "sleeps", ".")
    assert examples[2].hypothesis == f"{NBSP}A dog.\u2028"
    assert [e.line for e in examples] == [1, 3, 4]
    assert isinstance(pair_reader(path), SnliReader)


def test_snli_refuses_a_missing_sentence2_with_file_and_line(tmp_path: Path) -> None:
    record = _snli_record(1)
    del record["sentence2"]
    path = write_lines(
        tmp_path / "snli_1.0_dev.jsonl", [json.dumps(_snli_record(0)), "", json.dumps(record)]
    )
    _error_at(SnliReader(path), path, 3, "missing field 'sentence2'")


# ---------------------------------------------------------------- SQuAD v1.1 JSON
def test_squad_ignores_extra_keys_and_finds_spans_in_unicode_spaced_contexts(
    tmp_path: Path,
) -> None:
    context = f"Born on 5{NBSP}May 1818 in Trier,\u2009Marx moved to\u3000London\u202fin 1849."
    answers = [f"5{NBSP}May 1818", "Marx", "London", "1849"]
    qas = [
        {
            "id": f"q{n}",
            "question": f"Question {n}?",
            "is_impossible": False,  # as SQuAD 2.0-style files write it
            "answers": [
                {"text": text, "answer_start": context.index(text), "answer_end": 0, "by": "x"}
            ],
            "plausible_answers": [],
        }
        for n, text in enumerate(answers)
    ]
    document = {
        "version": "1.1",
        "source": "test",
        "data": [
            {
                "title": "Marx",
                "wiki_id": 7,
                "paragraphs": [{"context": context, "qas": qas, "note": "n"}],
            }
        ],
    }
    path = tmp_path / "dev-v1.1.json"
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    examples = read_squad(path)
    assert [e.qid for e in examples] == ["q0", "q1", "q2", "q3"]
    for example, text in zip(examples, answers, strict=True):
        (answer,) = example.answers
        assert (answer.text, answer.start) == (text, context.index(text))
        assert example.span is not None
        assert example.span_text(*example.span) == text
    assert examples[0].context_tokens[2:4] == ("5", "May")  # the no-break space separates
    assert all(not token.isspace() for token in examples[0].context_tokens)
