"""A CoNLL-2012 corpus whose middle columns carry other annotations than predicate arguments
(scene time stamps, say) reads for coreference as it does with ``*`` there: coreference
validates only the columns it reads (document, word, speaker, coreference), as e2e-coref's
``minimize.py`` does; semantic role labelling, which reads those columns, still refuses them
with the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.common.conll2012 import read_documents
from tasks.common.io import DataError, ReadStats
from tasks.coref.data import load_split, read_coref
from tasks.coref.evaluate import evaluate_files, write_response
from tasks.srl.data import read_srl
from tests.tasks.helpers import assert_read_error, write_lines

DOC = "friends/s01e01"
#: (word, speaker, coreference) of each token; a blank word ends a sentence.
TOKENS = [
    ("Monica", "Ross", "(0)"),
    ("said", "Ross", "-"),
    ("hello", "Ross", "-"),
    ("", "", ""),
    ("She", "Joey", "(0)"),
    ("left", "Joey", "-"),
    ("the", "Joey", "(1"),
    ("cafe", "Joey", "1)"),
    ("", "", ""),
]


def _file(
    path: Path,
    index: list[str] | None = None,
    ne: list[str] | None = None,
    srl: list[str] | None = None,
) -> Path:
    """The document, with token i's word index, named-entity and predicate column from
    ``index[i]``, ``ne[i]`` and ``srl[i]`` (``None``: its position, ``*`` and ``*``)."""
    rows = [f"#begin document ({DOC}); part 000"]
    token = 0
    for word, speaker, coref in TOKENS:
        if not word:
            rows.append("")
            continue
        middle = [
            index[token] if index is not None else str(token),
            word,
            *["-"] * 5,
            speaker,
            ne[token] if ne is not None else "*",
            srl[token] if srl is not None else "*",
        ]
        rows.append(" ".join([DOC, "0", *middle, coref]))
        token += 1
    rows.append("#end document")
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_lines(path, rows)


#: Scene time stamps where the predicate column would be.
STAMPS = ["390823", "390823", "390911", "391002", "391002", "391007", "391007", "391010"]
#: Junk for the other middle columns: an unclosed bracket, a stray closing one, a clock time.
JUNK = ["(SCENE", "-", "x)", "39:10:05", "*", "(A*", "B)", "?"]
#: Clock times where the word index would be.
CLOCK = [f"{s[:2]}:{s[2:4]}:{s[4:]}" for s in STAMPS]


def _variants(folder: Path) -> dict[str, Path]:
    """The same document written with ``*`` (``plain``), with time stamps in the predicate
    column (``stamped``), and with junk in the word index and named entities too (``junk``)."""
    name = "train.english.v4_gold_conll"
    return {
        "plain": _file(folder / "plain" / name),
        "stamped": _file(folder / "stamped" / name, srl=STAMPS),
        "junk": _file(folder / "junk" / name, index=CLOCK, ne=JUNK, srl=JUNK[::-1]),
    }


def test_time_stamps_in_the_middle_columns_read_as_stars_for_coreference(
    tmp_path: Path,
) -> None:
    files = _variants(tmp_path)
    (expected,) = read_coref(files["plain"])
    assert expected.clusters == (((0, 0), (3, 3)), ((5, 6),))
    for variant in ("stamped", "junk"):
        (got,) = read_coref(files[variant])
        assert (got.clusters, got.sentences, got.speakers) == (
            expected.clusters,
            expected.sentences,
            expected.speakers,
        ), variant
        (document,) = read_documents(files[variant], layers="coreference")
        assert all(s.srl_frames == () and s.named_entities == () for s in document.sentences)
        # the run's path: a data folder in e2e-coref's layout
        stats = ReadStats()
        (split,) = load_split("train", files[variant].parent, stats)
        assert split.clusters == expected.clusters and stats.examples == 1
        # and the scorer reads such a key file, too
        response = tmp_path / f"{variant}.response"
        write_response(files[variant], {(DOC, 0): split.clusters}, response)
        score, _ = evaluate_files(files[variant], response)
        assert score.conll_f1 == pytest.approx(1.0)


def test_srl_still_refuses_them_with_file_and_line(tmp_path: Path) -> None:
    files = _variants(tmp_path)
    assert len(list(read_srl(files["plain"]))) == 0  # no predicate: nothing to label, no error
    with pytest.raises(DataError) as info:
        list(read_srl(files["stamped"]))
    assert str(info.value) == f"{files['stamped']}:2: malformed SRL tag '390823'"
    assert_read_error(lambda: read_srl(files["junk"]), 2, "word index '39:08:23' is not an integer")
    assert_read_error(lambda: read_documents(files["stamped"]), 2, "malformed SRL tag '390823'")


def test_coreference_still_checks_the_columns_it_reads(tmp_path: Path) -> None:
    """Words, speakers and coreference keep their places and rules."""
    stamped = _file(tmp_path / "a_conll", index=CLOCK, ne=JUNK, srl=STAMPS)
    lines = stamped.read_text(encoding="utf-8").splitlines()
    bad_coref = [*lines[:2], lines[2].rsplit(" ", 1)[0] + " (0x", *lines[3:]]
    path = write_lines(tmp_path / "b_conll", bad_coref)
    assert_read_error(lambda: read_coref(path), 3, "malformed coreference tag '(0x'")
    short = [*lines[:2], " ".join(lines[2].split()[:-2] + ["-"]), *lines[3:]]
    path = write_lines(tmp_path / "c_conll", short)
    assert_read_error(lambda: read_coref(path), 3, "expected 13 columns as on line 2")
    with pytest.raises(ValueError, match="layers must be one of"):
        list(read_documents(stamped, layers="srl"))  # type: ignore[arg-type]
