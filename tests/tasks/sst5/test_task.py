"""SST-5 through the task protocol: presets, recipe pieces, data sources and the label-accuracy
scorer of jsonl data (the shared properties, learning included, are in
tests/contract/test_tasks.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tasks.common.io import DataError
from tasks.representations import Layers
from tasks.sst5.config import PAPER_TRAINING, Sst5Config
from tasks.sst5.evaluate import main
from tasks.sst5.task import TASK, VERSION, setup
from tests.tasks.helpers import run_cli, write_lines

TINY = ("word_vectors=random:4", "pre_encode_dim=4", "encoder_hidden=3", "integrator_hidden=3")


@pytest.fixture(scope="module")
def recipe():  # type: ignore[no-untyped-def]
    return setup("mini", TINY, None)


def test_presets() -> None:
    paper, mini = TASK.configure("paper", ()), TASK.configure("mini", ())
    assert paper.word_vectors == "glove-840b" and not paper.lowercase_words
    assert (paper.pre_encode_dim, paper.encoder_hidden, paper.integrator_hidden) == (300,) * 3
    # allennlp's maxout at Adam 1e-3 (a27afe0b), not A.8's ReLU layers at 1e-4 (unverified)
    assert (paper.output, paper.output_dims, paper.maxout_pool) == ("maxout", (1200, 600), 4)
    assert (paper.train_subtrees, paper.min_phrase_tokens) == (True, 4)
    assert paper.train.optimizer.lr == 1e-3 and PAPER_TRAINING.optimizer.lr == 1e-4
    assert paper.train == replace(PAPER_TRAINING, optimizer=paper.train.optimizer)
    assert (paper.train.batch_size, paper.train.clip_norm, paper.train.patience) == (100, 5.0, 5)
    assert mini.word_vectors == "glove" and mini.lowercase_words
    assert mini.train.schedule.kind == "plateau" and mini.train.patience == 2
    assert mini.training_data == "phrases of >= 4 tokens"
    with pytest.raises(ValueError, match="no preset 'huge'; choose mini, paper"):
        TASK.configure("huge", ())
    with pytest.raises(ValueError, match="output"):
        Sst5Config(output="softmax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="same length"):
        Sst5Config(output_dims=(3,))
    with pytest.raises(ValueError, match="together"):
        setup("mini", (*TINY, "train_file=a.jsonl"), None)


def test_task_spec() -> None:
    assert TASK.version == VERSION and TASK.presets == ("mini", "paper")
    assert TASK.default_sites == {"input"} and TASK.elmo_dropout == 0.0  # paper (a27afe0b)
    assert TASK.sites_for("mini") == {"input", "output"} and TASK.elmo_dropout_for("mini") == 0.5
    assert TASK.default_mix.lam == 0.001 and TASK.default_mix.mode == "all"
    assert TASK.table_rows[0].paper_key == "sst5" and TASK.metric.key == "accuracy"
    with pytest.raises(FileNotFoundError, match="--glove"):
        setup("paper", (), None)


def test_demo_recipe_trains_on_phrases_and_scores_roots(recipe) -> None:  # type: ignore[no-untyped-def]
    assert recipe.layout == "trees" and recipe.labels == ("0", "1", "2", "3", "4")
    info = recipe.training_data
    assert info["rule"] == "phrases of >= 4 tokens" and info["sentences"] == 2000
    assert info["phrases"] > 5000 and info["skipped"]["short phrase"] > 0
    train = recipe.splits["train"]
    assert min(len(ex.tokens) for ex in train if not ex.root) >= 4
    for split in ("dev", "test"):
        assert len(recipe.splits[split]) == 500 and all(ex.root for ex in recipe.splits[split])
    roots = setup("mini", (*TINY, "train_subtrees=false"), None)
    assert len(roots.splits["train"]) == 2000 and roots.training_data["phrases"] == 0
    every = setup("mini", (*TINY, "min_phrase_tokens=1"), None)
    assert every.training_data["rule"] == "every subtree (all phrases)"
    assert len(every.splits["train"]) > len(train)


def test_collate(recipe) -> None:  # type: ignore[no-untyped-def]
    examples = recipe.splits["dev"][:3]
    batch = recipe.collate(examples, lambda seqs: Layers.empty([len(x) for x in seqs]))
    n = max(len(ex.tokens) for ex in examples)
    assert batch.words.shape == batch.mask.shape == (3, n)
    assert batch.mask.sum(1).tolist() == [len(ex.tokens) for ex in examples]
    assert batch.labels.tolist() == [ex.label for ex in examples]


def _jsonl(path: Path, rows: list[tuple[str, object]]) -> Path:
    return write_lines(path, [json.dumps({"text": t, "label": label}) for t, label in rows])


ROWS = [
    ("a fine film .", "pos"),
    ("dull and slow", "neg"),
    ("quite good", "pos"),
    ("awful", "neg"),
    ("so so", "meh"),
]


def test_jsonl_folder_any_label_set(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    _jsonl(tmp_path / "train.jsonl", ROWS)
    _jsonl(tmp_path / "valid.jsonl", ROWS[:3])  # valid.jsonl is accepted for dev
    _jsonl(tmp_path / "test.jsonl", ROWS[1:])
    recipe = setup("mini", TINY, str(tmp_path))
    assert recipe.layout == "jsonl" and recipe.labels == ("meh", "neg", "pos")
    assert [ex.label for ex in recipe.splits["dev"]] == [2, 1, 2]
    assert recipe.splits["test"][0].tokens == ("dull", "and", "slow")
    assert recipe.training_data["rule"] == "sentences (no trees)"
    test = recipe.splits["test"]
    predictions = [1, 1, 0, 0]
    path = recipe.write_predictions(predictions, test, tmp_path / "predictions-test")
    assert path.read_text().split() == ["neg", "neg", "meh", "meh"]
    ours = recipe.score(predictions, test)
    assert ours == {"accuracy": 0.5}
    status, report, _ = run_cli(main, [str(tmp_path / "test.jsonl"), str(path)], capsys)
    assert status == 0 and report["accuracy"] == pytest.approx(100 * ours["accuracy"])
    assert (report["sentences"], report["correct"]) == (4, 2)


def test_jsonl_integer_labels_sort_numerically(tmp_path) -> None:  # type: ignore[no-untyped-def]
    rows = [("a b", 10), ("c", 9), ("d e", 2)]
    _jsonl(tmp_path / "train.jsonl", rows)
    _jsonl(tmp_path / "dev.jsonl", rows)
    assert setup("mini", TINY, str(tmp_path)).labels == ("2", "9", "10")


def test_explicit_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    train = _jsonl(tmp_path / "mine-train.jsonl", ROWS)
    dev = _jsonl(tmp_path / "mine-dev.jsonl", ROWS[:2])
    files = (f"train_file={train}", f"dev_file={dev}")
    recipe = setup("mini", (*TINY, *files), None)
    assert set(recipe.splits) == {"train", "dev"} and recipe.files["dev"] == str(dev)
    trees = write_lines(tmp_path / "t.txt", ["(3 (2 It) (4 (2 's) (3 fine)))"])
    with pytest.raises(ValueError, match="mix"):
        setup("mini", (*TINY, f"train_file={train}", f"dev_file={trees}"), None)


@pytest.mark.parametrize(
    ("dev_line", "reason"),
    [
        ('{"text": "ok", "label": "great"}', "not in the training label set"),
        ('{"text": "   ", "label": "pos"}', "empty text"),
        ('{"text": "' + "w " * 13 + '", "label": "pos"}', "longer than the model's limit"),
        ('{"text": "ok", "label": true}', "string or an integer"),
        ('{"text": "ok", "label": " pos"}', "surrounding spaces"),
        ('{"text": "ok"}', 'missing "label"'),
        ('{"text": ["ok"], "label": "pos"}', "must be a string"),
        ("[1, 2]", "expected an object"),
        ('{"text": "ok", ', "invalid JSON"),
    ],
)
def test_bad_jsonl_input_is_located(tmp_path, dev_line: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    _jsonl(tmp_path / "train.jsonl", ROWS)
    write_lines(tmp_path / "dev.jsonl", ['{"text": "fine", "label": "pos"}', dev_line])
    with pytest.raises(DataError) as info:
        setup("mini", (*TINY, "max_tokens=12"), str(tmp_path))
    assert info.value.path.endswith("dev.jsonl") and info.value.line == 2
    assert reason in info.value.reason


def test_long_tree_sentence_is_located(tmp_path) -> None:  # type: ignore[no-untyped-def]
    short, long = "(2 (2 a) (2 b))", "(2 (2 a) (2 (2 b) (2 c)))"
    write_lines(tmp_path / "train.txt", [short, short, long])
    write_lines(tmp_path / "dev.txt", [short])
    with pytest.raises(DataError) as info:
        setup("mini", (*TINY, "max_tokens=2"), str(tmp_path))
    assert info.value.path.endswith("train.txt") and info.value.line == 3
    assert "max_tokens=2" in info.value.reason


def test_offline_hub_error_names_the_files(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import datasets

    def offline(*args: object, **kwargs: object) -> None:
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(FileNotFoundError) as info:
        setup("mini", TINY, "hf:SetFit/sst5")
    message = str(info.value)
    assert "SetFit/sst5" in message and "train.txt" in message and "train.jsonl" in message


def test_a_data_folder_is_never_completed_from_the_hub(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tasks.sst5 import data as sst5_data

    def no_hub() -> None:
        raise AssertionError("the Hugging Face Hub was consulted for a --data folder")

    monkeypatch.setattr(sst5_data, "require_datasets", no_hub)
    write_lines(tmp_path / "train.txt", ["(2 (2 a) (2 b))"])
    with pytest.raises(FileNotFoundError) as info:
        setup("mini", TINY, str(tmp_path))
    message = str(info.value)
    assert message.startswith(f"{tmp_path}: no dev.txt (SST trees")
    assert "no train.jsonl and no dev.jsonl or valid.jsonl (JSON lines" in message
    assert message.endswith("pass --data hf:SetFit/sst5 to read it from there")
    assert "\n" not in message
    with pytest.raises(sst5_data.SstNotAvailable, match="no such folder"):
        setup("mini", TINY, str(tmp_path / "nowhere"))


def test_hub_rows_become_sentences(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import datasets

    def fake(name: str, split: str) -> list[dict[str, object]]:
        assert name == "SetFit/sst5"
        return [{"text": "a good film", "label": 3, "label_text": "positive"}] * 2

    monkeypatch.setattr(datasets, "load_dataset", fake)
    recipe = setup("mini", TINY, "hf:SetFit/sst5")
    assert recipe.layout == "hub" and recipe.files["dev"] == "hf:SetFit/sst5[validation]"
    assert [ex.label for ex in recipe.splits["test"]] == [3, 3]
