"""One byte-order-mark rule for every format: a UTF-8 BOM at the start of a
file is dropped by :func:`tasks.common.io.iter_lines`, so each reader reads the file exactly as
without it (a BOM never turns ``-DOCSTART-`` into a word or breaks a first JSON line)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tasks.common.conll2012 import read_documents
from tasks.common.io import BOM, iter_lines, starts_with_bom
from tasks.ner.data import ColumnShape, read_columns, read_conllu
from tasks.snli.data import pair_reader
from tasks.sst5.data import read_jsonl_texts, read_tree_texts

CONLL2003 = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
CONLLU = (
    "# text = Hi there\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n"
    "2\tthere\tthere\tADV\tRB\t_\t1\tadvmod\t_\t_\n\n"
)
SNLI = (
    '{"gold_label": "neutral", "sentence1": "A man sleeps .", "sentence2": "He dreams .", '
    '"pairID": "1"}\n'
)
SST_TREES = "(3 (2 It) (4 (4 works) (2 .)))\n"
SST_JSONL = '{"text": "it works", "label": "pos"}\n'
CONLL2012 = (
    "#begin document (doc); part 000\n"
    "doc 0 0 John NNP * - - - - * (0)\n"
    "doc 0 1 left VBD * leave 01 - - * -\n"
    "doc 0 2 . . * - - - - * -\n\n"
    "#end document\n"
)


def _both(tmp_path: Path, name: str, text: str, read: Callable[[Path], Any]) -> tuple[Any, Any]:
    plain, marked = tmp_path / f"plain-{name}", tmp_path / f"bom-{name}"
    plain.write_text(text, encoding="utf-8")
    marked.write_text(BOM + text, encoding="utf-8")
    assert starts_with_bom(marked) and not starts_with_bom(plain)
    return read(plain), read(marked)


def _without_paths(value: Any) -> Any:
    """Reader outputs name their file: compare them with the file names taken out."""
    return repr(value).replace("bom-", "plain-")


@pytest.mark.parametrize(
    ("name", "text", "read"),
    [
        ("eng.train", CONLL2003, lambda p: list(read_columns(p))),
        ("x.conllu", CONLLU, lambda p: list(read_conllu(p))),
        ("snli.jsonl", SNLI, lambda p: list(pair_reader(p))),
        (
            "trees.txt",
            SST_TREES,
            lambda p: read_tree_texts(p, phrases=False, min_tokens=1, max_tokens=9)[0],
        ),
        ("texts.jsonl", SST_JSONL, lambda p: read_jsonl_texts(p, max_tokens=9)),
        ("doc_gold_conll", CONLL2012, lambda p: list(read_documents(p))),
    ],
)
def test_every_format_reads_the_same_with_a_byte_order_mark(
    tmp_path: Path, name: str, text: str, read: Callable[[Path], Any]
) -> None:
    plain, marked = _both(tmp_path, name, text, read)
    assert plain and _without_paths(marked) == _without_paths(plain)


def test_a_bom_is_dropped_only_at_the_start_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text(f"{BOM}a\n{BOM}b\n", encoding="utf-8")
    assert list(iter_lines(path)) == [(1, "a"), (2, f"{BOM}b")]


def test_the_conll_reader_reports_the_stripped_bom(tmp_path: Path) -> None:
    path = tmp_path / "eng.train"
    path.write_text(BOM + CONLL2003, encoding="utf-8")
    shape = ColumnShape()
    sentences = list(read_columns(path, shape=shape))
    assert shape.bom and shape.docstarts == 1 and len(sentences) == 1
    assert sentences[0].tokens == ("EU", "rejects")
