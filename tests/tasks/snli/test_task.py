"""SNLI through the task protocol: data sources, the pair policy, missing predictions and plain
label sets in the official scorer (the shared properties, learning included, are in
tests/contract/test_tasks.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from tasks.common.io import DataError
from tasks.representations import Layers
from tasks.snli import data as snli_data
from tasks.snli.data import LABELS, PlainPairReader, SnliNotAvailable, load_hf, tokenize
from tasks.snli.evaluate import evaluate_files, main
from tasks.snli.task import TASK, VERSION, setup
from tests.tasks.helpers import run_cli, write_lines

TINY = ("word_vectors=random:4", "hidden=4")


@pytest.fixture(scope="module")
def recipe():  # type: ignore[no-untyped-def]
    return setup("mini", TINY, None)


def plain(premise: str, hypothesis: str, label: object, **extra: object) -> str:
    return json.dumps({"premise": premise, "hypothesis": hypothesis, "label": label, **extra})


def plain_dir(tmp_path: Path, dev_label: str = "yes", **lines: list[str]) -> Path:
    train = [
        plain("The cat sat on the mat.", "A cat sat.", "yes"),
        plain("The cat sat on the mat.", "The dog ran.", "no"),
        plain("It rained all day.", "It was wet.", "yes", id=7),
        plain("It rained.", "Nobody knows.", "-"),  # no label: skipped
    ]
    dev = [plain("Snow fell.", "It was cold.", dev_label), plain("A man ran.", "He ran.", "no")]
    for name, content in {"train": train, "dev": dev, **lines}.items():
        write_lines(tmp_path / f"{name}.jsonl", content)
    return tmp_path


# ------------------------------------------------------------------------- spec and presets
def test_task_spec_and_presets() -> None:
    assert TASK.version == VERSION and TASK.presets == ("mini", "paper")
    assert TASK.default_sites == frozenset({"input", "output"})
    assert (TASK.default_mix.mode, TASK.default_mix.lam, TASK.default_mix.layer_norm) == (
        "all",
        0.001,
        True,
    )
    assert TASK.table_rows[0].paper_key == "snli" and TASK.metric.key == "accuracy"
    assert TASK.seeds == 5  # paper Table 1: 88.7 ± 0.17 over five seeds
    # esim_elmo.jsonnet's ELMo dropout; mini keeps its DEMO numbers' 0.5
    assert TASK.elmo_dropout_for("paper") == 0.0 and TASK.elmo_dropout_for("mini") == 0.5
    assert TASK.sites_for("mini") == TASK.sites_for("paper") == TASK.default_sites
    paper = TASK.configure("paper", ())
    assert (paper.hidden, paper.dropout, paper.word_vectors, paper.weight_l2) == (
        300,
        0.5,
        "glove-840b",
        1e-4,
    )
    t = paper.train
    assert (t.batch_size, t.optimizer.name, t.optimizer.lr, t.clip_norm) == (32, "adam", 4e-4, 5.0)
    assert (t.schedule.kind, t.schedule.factor, t.schedule.patience) == ("plateau", 0.5, 0)
    assert t.patience is not None
    mini = TASK.configure("mini", ())
    assert mini.word_vectors == "glove" and mini.hidden < paper.hidden
    with pytest.raises(ValueError, match="no preset 'huge'; choose mini, paper"):
        TASK.configure("huge", ())
    with pytest.raises(FileNotFoundError, match="--glove"):
        setup("paper", (), None)


# ------------------------------------------------------------------------- data sources
def test_demo_recipe(recipe) -> None:  # type: ignore[no-untyped-def]
    assert recipe.labels == LABELS
    assert {k: len(v) for k, v in recipe.splits.items()} == {"train": 3600, "dev": 900, "test": 900}
    ex = recipe.splits["dev"][0]
    premise, hypothesis = recipe.tokens(ex)
    assert premise == ex.premise_tokens  # PTB tokens from the binary parse
    assert recipe.sequences([ex]) == [list(premise), list(hypothesis)]
    assert recipe.size(ex) == len(premise) + len(hypothesis)
    batch = recipe.collate(
        recipe.splits["dev"][:5], lambda seqs: Layers.empty([len(x) for x in seqs])
    )
    assert batch.premise_words.shape[0] == 5 and batch.labels is not None


def test_plain_jsonl_with_any_label_set(tmp_path: Path) -> None:
    folder = plain_dir(tmp_path)
    r = setup("mini", TINY, str(folder))
    assert r.labels == ("yes", "no") and set(r.splits) == {"train", "dev"}
    assert [ex.pair_id for ex in r.splits["train"]] == ["train:1", "train:2", "7"]
    assert r.splits["train"][0].premise_tokens == ("The", "cat", "sat", "on", "the", "mat", ".")
    assert r.build_model(_injector()).logits.out_features == 2


def test_dev_label_outside_the_training_labels_is_located(tmp_path: Path) -> None:
    folder = plain_dir(tmp_path, dev_label="maybe")
    with pytest.raises(DataError) as info:
        setup("mini", TINY, str(folder))
    assert info.value.line == 1 and info.value.path.endswith("dev.jsonl")
    assert "'maybe' is not in the label set" in info.value.reason


def test_explicit_files(tmp_path: Path) -> None:
    folder = plain_dir(tmp_path)
    (folder / "mine.jsonl").write_text((folder / "dev.jsonl").read_text())
    r = setup("mini", (*TINY, "dev_file=mine.jsonl", "test_file=mine.jsonl"), str(folder))
    assert len(r.splits["test"]) == 2 and r.sources["test"].endswith("mine.jsonl")
    r = setup(
        "mini",
        (*TINY, f"train_file={folder / 'train.jsonl'}", f"dev_file={folder / 'dev.jsonl'}"),
        None,
    )
    assert r.labels == ("yes", "no")
    with pytest.raises(DataError, match="no such file"):
        setup("mini", (*TINY, "train_file=missing.jsonl"), str(folder))


def test_empty_and_long_pairs(tmp_path: Path) -> None:
    long = " ".join(["word"] * 12)
    train = [
        plain("A b c.", "A b.", "yes"),
        plain("  ", "A b.", "no"),  # empty premise: skipped
        plain(long, "A b.", "no"),  # longer than max_tokens=10: skipped
    ]
    folder = plain_dir(tmp_path, train=train, test=[plain(long, "Word.", "no")])
    r = setup("mini", (*TINY, "max_tokens=10"), str(folder))
    assert len(r.splits["train"]) == 1
    assert r.skipped == Counter(
        {"empty premise or hypothesis": 1, "a side longer than max_tokens": 1}
    )
    assert r.truncated["test"] == 1 and len(r.splits["test"]) == 1  # cut, still scored
    assert len(r.tokens(r.splits["test"][0])[0]) == 10
    write_lines(folder / "dev.jsonl", [plain("Snow fell.", "yes", "yes"), plain("Rain.", "", "no")])
    with pytest.raises(DataError) as info:
        setup("mini", TINY, str(folder))
    assert info.value.line == 2 and "empty hypothesis" in info.value.reason


def test_plain_reader_errors(tmp_path: Path) -> None:
    bad = {
        "label type": (plain("a", "b", 1.5), "string or an integer"),
        "missing hypothesis": (json.dumps({"premise": "a", "label": "x"}), "hypothesis"),
        "missing label": (json.dumps({"premise": "a", "hypothesis": "b"}), "'label'"),
    }
    for line, reason in bad.values():
        path = write_lines(tmp_path / "bad.jsonl", [plain("a", "b", "x", id="z"), line])
        with pytest.raises(DataError) as info:
            list(PlainPairReader(path))
        assert info.value.line == 2 and reason in info.value.reason
    path = write_lines(
        tmp_path / "dup.jsonl", [plain("a", "b", "x", id=1), plain("a", "b", 0, id=1)]
    )
    with pytest.raises(DataError, match="duplicate"):
        list(PlainPairReader(path))
    reader = PlainPairReader(
        write_lines(tmp_path / "ok.jsonl", [plain("a", "b", -1), plain("a", "b", 2)])
    )
    assert [ex.label for ex in reader] == ["2"] and reader.stats.skipped["no label"] == 1


def test_tokenizer() -> None:
    assert tokenize("Two dogs don't play; it's 3.5 km.") == (
        "Two", "dogs", "do", "n't", "play", ";", "it", "'s", "3.5", "km", ".",
    )  # fmt: skip
    assert tokenize("   ") == ()


class _Rows(list):  # type: ignore[type-arg]
    """A stand-in for a Hugging Face split: a list of row dicts."""


def test_hugging_face_rows_and_offline_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = _Rows(
        [
            {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": 0},
            {"premise": "A dog runs.", "hypothesis": "A cat sleeps.", "label": -1},
            {"premise": "A dog runs.", "hypothesis": "A cat sleeps.", "label": 2},
        ]
    )
    seen: list[str] = []

    def load_dataset(name: str, split: str, cache_dir: str | None = None) -> _Rows:
        seen.append(f"{name}[{split}]")
        return rows

    monkeypatch.setattr(
        snli_data, "require_datasets", lambda: SimpleNamespace(load_dataset=load_dataset)
    )
    examples, skipped = load_hf("dev")
    assert seen == ["stanfordnlp/snli[validation]"] and skipped == 1
    assert [(e.pair_id, e.label) for e in examples] == [
        ("validation-0", "entailment"),
        ("validation-2", "contradiction"),
    ]
    assert examples[0].hypothesis_tokens == ("An", "animal", "moves", ".")
    r = setup("mini", TINY, "hf:me/nli")  # --data hf:NAME: that Hugging Face dataset
    assert set(r.splits) == {"train", "dev", "test"} and len(r.splits["train"]) == 2
    assert seen[-1] == "me/nli[test]" and r.read_stats["dev"].source == "hf:me/nli[dev]"

    def offline(name: str, split: str, cache_dir: str | None = None) -> None:
        raise ConnectionError("no network")

    monkeypatch.setattr(
        snli_data, "require_datasets", lambda: SimpleNamespace(load_dataset=offline)
    )
    with pytest.raises(SnliNotAvailable, match="snli_1.0_train.jsonl") as info:
        setup("mini", TINY, "hf:stanfordnlp/snli")
    assert "train.jsonl / dev.jsonl / test.jsonl" in str(info.value)


def test_a_data_folder_is_never_completed_from_the_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_hub() -> None:
        raise AssertionError("the Hugging Face Hub was consulted for a --data folder")

    monkeypatch.setattr(snli_data, "require_datasets", no_hub)
    write_lines(tmp_path / "train.jsonl", [plain("A dog runs.", "An animal moves.", "yes")])
    with pytest.raises(FileNotFoundError) as info:
        setup("mini", TINY, str(tmp_path))
    message = str(info.value)
    assert message.startswith(f"{tmp_path}: no snli_1.0_dev.jsonl or dev.jsonl;")
    assert message.endswith("pass --data hf:stanfordnlp/snli to read it from there")
    assert "\n" not in message
    with pytest.raises(SnliNotAvailable, match="no such folder.*train.jsonl and no snli_1.0_dev"):
        setup("mini", TINY, str(tmp_path / "nowhere"))


# ------------------------------------------------------------------------- scoring
def test_missing_predictions_are_wrong_for_score_and_the_cli(
    recipe, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[no-untyped-def]
    dev = recipe.splits["dev"]
    predictions = {ex.pair_id: LABELS[len(ex.hypothesis) % 3] for ex in dev[:-7]}  # 7 missing
    path = recipe.write_predictions(predictions, dev, tmp_path / "predictions-dev")
    assert path.suffix == ".jsonl" and len(path.read_text().splitlines()) == len(dev) - 7
    ours = recipe.score(predictions, dev)["accuracy"]
    data = TASK.demo() / "snli_1.0_dev.jsonl"
    status, report, _ = run_cli(main, [str(data), str(path)], capsys)
    assert status == 0 and report["missing"] == 7
    assert report["accuracy"] == pytest.approx(100 * ours, abs=1e-9)
    assert 0.2 < ours < 0.5


def test_plain_files_score_with_their_own_labels(tmp_path: Path) -> None:
    folder = plain_dir(tmp_path)
    r = setup("mini", TINY, str(folder))
    dev = r.splits["dev"]
    path = r.write_predictions({dev[0].pair_id: "yes", dev[1].pair_id: "yes"}, dev, tmp_path / "p")
    assert (
        evaluate_files(folder / "dev.jsonl", path).accuracy
        == r.score({dev[0].pair_id: "yes", dev[1].pair_id: "yes"}, dev)["accuracy"]
        == pytest.approx(0.5)
    )


# ------------------------------------------------------------------------- helpers
def _injector():  # type: ignore[no-untyped-def]
    from tasks.features.inject import Injector
    from tasks.representations import build_representation

    return Injector(build_representation("none"), frozenset())
