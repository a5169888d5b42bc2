"""The paper's own public data sets in ``real-data fetch``: CoNLL-2003 behind its terms, the SST
trees, their converters, and a ``shared:`` folder found in the fetched copy beside a shared
folder that lacks it."""

from __future__ import annotations

from pathlib import Path

import pytest

from bilm.pretrained import sha256_of
from experiments.data import real_sets
from experiments.data.fetch import install, manifest
from experiments.data.fetch.convert import (
    CONVERTERS,
    check_conll2003,
    check_sentiment_trees,
    convert_conll2003,
    convert_sentiment_trees,
)
from experiments.data.fetch.formats import FormatError

COMMIT = "0" * 40
CONLL = "-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"
TREE = "(3 (2 It) (4 (2 's) (3 fine)))\n"


def _sources(tmp_path: Path) -> Path:
    """A ``--from`` folder: the two repositories' files, laid out as the manifest names them."""
    base = tmp_path / "from"
    conll = base / "synalp-ner" / "corpus" / "CoNLL-2003"
    trees = base / "nn4nlp-code" / "data" / "trees"
    for folder, names, text in (
        (conll, ("eng.train", "eng.testa", "eng.testb"), CONLL),
        (trees, ("train.txt", "dev.txt", "test.txt"), TREE),
    ):
        folder.mkdir(parents=True)
        for name in names:
            (folder / name).write_text(text)
    return base


def _manifest(source: Path, tmp_path: Path) -> manifest.Manifest:
    """A manifest of the two sets over ``source`` (digests computed from the converters)."""
    lines = []
    for key, github in (("synalp-ner", "synalp/NER"), ("nn4nlp-code", "neubig/nn4nlp-code")):
        lines += [f"[repositories.{key}]", f'github = "{github}"', f'commit = "{COMMIT}"']
        lines += ['licence = "test"', f'raw = "{(tmp_path / "offline").as_uri()}"']
    for name, key, below, converter, terms in (
        ("conll2003", "synalp-ner", "corpus/CoNLL-2003", "conll2003", "research use only"),
        ("sst", "nn4nlp-code", "data/trees", "sentiment-trees", ""),
    ):
        files = {f"{below}/{p.name}": p for p in sorted((source / key / below).iterdir())}
        out = tmp_path / "expected" / name
        out.mkdir(parents=True)
        CONVERTERS[converter](files, out)
        count, digest = install.tree_digest(out)
        lines += [f"[sets.{name}]", f'converter = "{converter}"', 'licence = "test"']
        lines += ['citation = "test"', f"output_files = {count}", f'output_sha256 = "{digest}"']
        lines += [f'terms = "{terms}"'] if terms else []
        lines.append(f'[sets.{name}.files."{key}"]')
        lines += [f'"{path}" = "{sha256_of(local)}"' for path, local in files.items()]
    path = tmp_path / "sources.toml"
    path.write_text("\n".join(lines) + "\n")
    folders = {"conll2003": "paper/conll2003", "sst": "paper/sst"}
    return manifest.load_manifest(path, folders=folders)


def test_conll2003_is_fetched_only_with_its_terms_accepted(tmp_path: Path) -> None:
    source = _sources(tmp_path)
    loaded = _manifest(source, tmp_path)
    root = tmp_path / "data"
    lines: list[str] = []
    with pytest.raises(install.TermsNotAccepted, match="--accept-terms conll2003: research use"):
        install.fetch(loaded, ["conll2003"], root=root, source=source, log=lines.append)
    assert not (root / "paper" / "conll2003").exists()
    states = install.fetch(loaded, None, root=root, source=source, log=lines.append)
    assert [s.name for s in states] == ["sst"]  # all sets: the one with terms left out, said so
    assert any(
        "conll2003: left out" in line and "--accept-terms conll2003" in line for line in lines
    )
    states = install.fetch(
        loaded, ["conll2003"], root=root, source=source, accepted=["conll2003"], log=lines.append
    )
    assert [s.state for s in states] == ["complete"]
    names = sorted(p.name for p in (root / "paper" / "conll2003").iterdir())
    assert names == ["eng.testa", "eng.testb", "eng.train"]
    assert (root / "paper" / "conll2003" / "eng.train").read_text() == CONLL
    assert (root / "paper" / "sst" / "dev.txt").read_text() == TREE


def test_the_converters_refuse_malformed_lines_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "eng.train"
    bad.write_text(CONLL + "word NN I-NP\n")
    with pytest.raises(FormatError, match=r"eng.train:6: expected 'WORD POS CHUNK TAG'"):
        check_conll2003(bad)
    bad.write_text("EU NNP I-NP X-ORG\n")
    with pytest.raises(FormatError, match=r"eng.train:1:"):
        check_conll2003(bad)
    trees = tmp_path / "train.txt"
    for text, where in (
        ("(2 a))", ":2:5: unbalanced,"),
        ("(2 (2 a)", ":2: expected"),
        ("2", ":2:"),
    ):
        trees.write_text(TREE + text + "\n")
        with pytest.raises(FormatError, match=f"train.txt{where}"):
            check_sentiment_trees(trees)
    with pytest.raises(FormatError, match="no source file eng.testb"):
        convert_conll2003({"x/eng.train": bad, "x/eng.testa": bad}, tmp_path)
    with pytest.raises(FormatError, match="no source file"):
        convert_sentiment_trees({}, tmp_path)


def test_a_fetched_set_is_found_beside_a_shared_folder_that_lacks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside, cache = tmp_path / "shared", tmp_path / "cache"
    monkeypatch.delenv("ELMO_BENCH_SHARED", raising=False)
    monkeypatch.setattr(real_sets, "_BESIDE", beside)
    monkeypatch.setenv("ELMO_BENCH_CACHE", str(cache))
    (beside / "data" / "real" / "x").mkdir(parents=True)
    fetched = real_sets.fetched_data_root() / "paper" / "conll2003"
    assert real_sets.data_path("shared:paper/conll2003") == str(beside / "data/paper/conll2003")
    fetched.mkdir(parents=True)
    assert real_sets.data_path("shared:real/x") == str(beside / "data" / "real" / "x")
    assert real_sets.data_path("shared:paper/conll2003") == str(fetched)
    assert real_sets.portable_source(f"{fetched}/eng.train") == "shared:paper/conll2003/eng.train"
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path / "mine"))  # the variable alone
    assert real_sets.data_path("shared:paper/conll2003") == str(
        tmp_path / "mine" / "data" / "paper" / "conll2003"
    )


def test_a_committed_table_of_sets_is_checked_against_its_own_family_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from experiments.report import committed

    argv = ("render", "paper-data", "--config", "paper", "--store", "results/paper/runs")
    paper = committed.Entry("paper-data", argv, "results/paper", "paper-data-paper-real")
    real = committed.Entry("real", ("render", "real", "--data", "real"), "results/real", "real")
    assert (paper.set_family, real.set_family) == ("paper", "real")
    assert committed.Entry("t1", ("render", "table1"), "results").set_family is None
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path))
    for item in real_sets.real_sets(family="real"):  # the stand-ins present, the paper's absent
        (tmp_path / "data" / item.folder).mkdir(parents=True)
    assert committed.unavailable(real) is None
    why = committed.unavailable(paper)
    assert why is not None and "--sets conll2003,sst --accept-terms conll2003" in why


def test_selected_epoch_lines_name_each_seed_s_best_epoch_and_the_epochs_run() -> None:
    from types import SimpleNamespace

    from experiments.report import reproductions

    (table,) = reproductions.tables("paper-data", "paper", "demo", (0, 1, 2), {}, tasks=["ner"])
    row, baseline = table.rows[0], table.columns[0]
    records = [
        SimpleNamespace(run_id=spec.run_id, metrics={"best_epoch": best, "epochs_run": 25.0})
        for spec, best in zip(table.expected(row, baseline), (22.0, 25.0, 19.0), strict=True)
    ]
    (line,) = reproductions.selected_epoch_lines(table, records)
    assert line.startswith("Selected epoch per seed (best dev; of the epochs run): ")
    assert "CoNLL-2003 NER (English): Baseline 22, 25, 19 (of 25)" in line
    assert "ELMo" not in line  # no record of that column: nothing said of it
    assert reproductions.selected_epoch_lines(table, []) == []


def test_the_paper_data_table_s_elmo_is_the_shipped_biLM_unless_elmo_is_given() -> None:
    from experiments.cli import build_parser
    from experiments.cli.tables import _tables
    from experiments.report.reproductions import expected_specs

    def elmo_configs(*extra: str) -> list[dict[str, object]]:
        args = build_parser().parse_args(["render", "paper-data", "--config", "paper", *extra])
        (table,) = _tables(args)
        return [
            s.representation_config for s in expected_specs(table) if s.representation == "elmo"
        ]

    shipped = elmo_configs()
    assert shipped and all("published" not in c and "checkpoint" not in c for c in shipped)
    assert all(c.get("finetune") == 1.0 for c in shipped)  # the paper preset's fine-tuning (A.1)
    given = elmo_configs("--elmo", "published:original")
    assert all(c.get("published") == "original" for c in given)


def test_the_paper_data_table_says_its_rows_are_the_paper_s_own_data() -> None:
    from experiments.cli import build_parser
    from experiments.cli.tables import _tables

    (paper,) = _tables(build_parser().parse_args(["render", "paper-data", "--config", "paper"]))
    assert any("Data: the paper's own public data sets" in line for line in paper.caption)
    assert not any("not the paper's datasets" in line for line in paper.caption)
    (real,) = _tables(build_parser().parse_args(["render", "real"]))
    assert any("not the paper's datasets" in line for line in real.caption)


def test_dev_curve_lines_give_the_mean_dev_score_five_epochs_before_the_cap_and_at_it() -> None:
    from types import SimpleNamespace

    from experiments.report import reproductions

    (table,) = reproductions.tables("paper-data", "paper", "demo", (0, 1), {}, tasks=["ner"])
    row, baseline = table.rows[0], table.columns[0]

    def log(offset: float) -> list[dict[str, float]]:
        return [{"epoch": e, "dev_f1": 0.80 + 0.01 * e + offset} for e in range(1, 9)]

    records = [
        SimpleNamespace(run_id=spec.run_id, log=log(offset))
        for spec, offset in zip(table.expected(row, baseline), (0.0, 0.02), strict=True)
    ]
    (line,) = reproductions.dev_curve_lines(table, records)
    # mean dev F1 at epoch 3: 0.84 (0.83, 0.85); at epoch 8: 0.89 (0.88, 0.90)
    assert "CoNLL-2003 NER (English) (dev F1): Baseline 84.00 → 89.00 (epochs 3 → 8)" in line
    assert "ELMo" not in line
    short = [SimpleNamespace(run_id=r.run_id, log=r.log[:5]) for r in records]
    (line,) = reproductions.dev_curve_lines(table, short)  # 5 epochs: from the first
    assert "Baseline 82.00 → 86.00 (epochs 1 → 5)" in line
    single = [SimpleNamespace(run_id=r.run_id, log=r.log[:1]) for r in records]
    assert reproductions.dev_curve_lines(table, single) == []  # one epoch: no curve
