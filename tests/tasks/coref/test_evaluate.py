"""Coreference documents, response writer and ``python -m tasks.coref.evaluate``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.common.conll2012 import read_documents
from tasks.common.io import DataError
from tasks.coref.data import read_coref, to_hf_dataset
from tasks.coref.evaluate import encode_clusters, evaluate_files, main, write_response
from tasks.coref.metric import score_corpus
from tests.conftest import shared_path
from tests.tasks.helpers import run_module

COREF = ("fixtures", "formats", "coref", "coref.gold_conll")


def _key(path: Path) -> dict[tuple[str, int], tuple[tuple[tuple[int, int], ...], ...]]:
    return {(d.document_id, d.part): d.clusters for d in read_coref(path)}


@pytest.mark.shared
def test_coref_documents() -> None:
    documents = list(read_coref(shared_path(*COREF)))
    assert [d.doc_key for d in documents] == [f"bc/cctv/00/cctv_0000_{p}" for p in (0, 1, 3, 5)]
    assert documents[0].genre == "bc" and documents[0].speakers[0][0] == "Speaker#1"
    assert sum(len(c) for d in documents for c in d.clusters) == 13


@pytest.mark.shared
def test_to_hf_dataset() -> None:
    dataset = to_hf_dataset(shared_path(*COREF))
    assert dataset.num_rows == 4
    assert dataset[0]["clusters"] == [[[23, 24], [41, 42]], [[28, 28], [32, 37]]]


@pytest.mark.shared
def test_round_trip_of_the_key_scores_100(tmp_path: Path) -> None:
    key = shared_path(*COREF)
    response = tmp_path / "response.conll"
    write_response(key, _key(key), response)
    # only the last column changes (cluster numbers are renumbered)
    key_lines, response_lines = key.read_text().splitlines(), response.read_text().splitlines()
    assert len(key_lines) == len(response_lines)
    for a, b in zip(key_lines, response_lines, strict=True):
        assert a.split()[:-1] == b.split()[:-1]
    assert [d.clusters for d in read_documents(response)] == list(_key(key).values())
    score, bookkeeping = evaluate_files(key, response)
    assert score.conll_f1 == 1.0 and score.num_documents == 4
    assert bookkeeping == {"missing_response_documents": 0, "ignored_response_documents": 0}


@pytest.mark.shared
def test_predicted_clusters_with_singletons_and_twinless_mentions(tmp_path: Path) -> None:
    key = shared_path(*COREF)
    gold = _key(key)
    predicted = dict(gold)
    part0 = ("bc/cctv/00/cctv_0000", 0)
    # merge the two clusters, add a twinless mention to it and a twinless singleton cluster
    predicted[part0] = (gold[part0][0] + gold[part0][1] + ((5, 6),), ((10, 10),))
    del predicted[("bc/cctv/00/cctv_0000", 5)]  # no prediction for part 5: all missed
    response = tmp_path / "response.conll"
    write_response(key, predicted, response)
    score, _ = evaluate_files(key, response)
    expected = score_corpus(
        (clusters, predicted.get(doc_key, ())) for doc_key, clusters in gold.items()
    )
    assert score == expected
    assert score.muc.recall < 1 and score.b_cubed.precision < 1 and score.ceafe.precision < 1


@pytest.mark.shared
def test_missing_extra_and_misaligned_documents(tmp_path: Path) -> None:
    key = shared_path(*COREF)
    text = key.read_text()
    parts = text.split("#begin document")
    response = tmp_path / "response.conll"
    # drop part 000, rename part 005 to 009
    response.write_text(
        "#begin document".join(["", *parts[2:]]).replace("); part 005", "); part 009"),
        encoding="utf-8",
    )
    score, bookkeeping = evaluate_files(key, response)
    assert bookkeeping == {"missing_response_documents": 2, "ignored_response_documents": 1}
    assert score.num_documents == 4 and score.muc.recall < 1 and score.muc.precision == 1
    shorter = tmp_path / "shorter.conll"
    lines = text.splitlines()
    del lines[27]  # the final "." of the first sentence: one token fewer in part 000
    shorter.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="tokens"):
        evaluate_files(key, shorter)
    twice = tmp_path / "twice.conll"
    twice.write_text(text + text, encoding="utf-8")
    with pytest.raises(DataError, match="repeated"):
        evaluate_files(twice, key)


@pytest.mark.shared
def test_too_many_repeated_mentions_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = shared_path(*COREF)
    gold = _key(key)
    part0 = ("bc/cctv/00/cctv_0000", 0)
    mention = gold[part0][0][0]
    predicted = dict(gold)
    # 11 more clusters repeat the first mention of part 0
    predicted[part0] = gold[part0] + tuple((mention, (i, i)) for i in range(50, 61))
    response = tmp_path / "response.conll"
    write_response(key, predicted, response)
    with pytest.raises(ValueError, match="too many repeated mentions"):
        evaluate_files(key, response)
    score, _ = evaluate_files(key, response, max_repeated_mentions=None)
    assert score.repeated_mentions == 11
    assert main([str(key), str(response)]) == 1
    assert "repeated" in capsys.readouterr().err


@pytest.mark.shared
def test_cli_json(tmp_path: Path) -> None:
    key = shared_path(*COREF)
    response = tmp_path / "response.conll"
    gold = _key(key)
    write_response(key, {k: v[:1] for k, v in gold.items()}, response)  # first cluster only
    report = json.loads(run_module("tasks.coref.evaluate", str(key), str(response)))
    assert set(report) >= {"muc", "bcub", "ceafe", "conll_f1", "mentions"}
    for metric in ("muc", "bcub", "ceafe"):
        assert report[metric]["precision"] == 100.0 and report[metric]["recall"] < 100.0
    mean = sum(report[m]["f1"] for m in ("muc", "bcub", "ceafe")) / 3
    assert report["conll_f1"] == pytest.approx(mean)


def test_encode_clusters() -> None:
    column = encode_clusters(5, [[(0, 3), (1, 1), (0, 1)], [(0, 4), (2, 2)]])
    assert column == ["(1|(0|(0", "(0)|0)", "(1)", "0)", "1)"]
    with pytest.raises(ValueError, match="cross"):
        encode_clusters(5, [[(0, 2), (1, 3)]])
    with pytest.raises(ValueError, match="outside"):
        encode_clusters(2, [[(1, 2)]])
    assert encode_clusters(2, []) == ["-", "-"]


def test_unknown_prediction_and_malformed_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "key_conll"
    row = "nw/x/00/x_0000 0 0 w NN * - - - - * (1)"
    key.write_text(f"#begin document (nw/x/00/x_0000); part 000\n{row}\n#end document\n")
    with pytest.raises(ValueError, match="absent from the key"):
        write_response(key, {("nw/other", 0): []}, tmp_path / "r")
    broken = tmp_path / "broken_conll"
    broken.write_text(f"#begin document (nw/x/00/x_0000); part 000\n{row}\n")
    assert main([str(key), str(broken)]) == 1
    assert "broken_conll:2" in capsys.readouterr().err
