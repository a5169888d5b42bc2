"""``--limit N`` reads only as far as it needs where a reader streams
(``TaskSpec.setup_limited``): SST-5 tree files and official SNLI JSON lines stop after the first
``N`` examples of each split. The splits are the first ``N`` examples a full read gives, and a
malformed line far below them is never reached; a configuration whose recipe depends on the whole
files (random word vectors) still reads them whole."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tasks.common.io import DataError
from tasks.registry import get_task
from tasks.sst5.data import read_tree_texts

SST_FILES = ("train.txt", "dev.txt", "test.txt")
SNLI_FILES = ("snli_1.0_train.jsonl", "snli_1.0_dev.jsonl", "snli_1.0_test.jsonl")


def with_bad_tail(
    task: str, files: tuple[str, ...], tmp_path: Path, line: str
) -> tuple[Path, Path]:
    """Two copies of the task's DEMO folder: as it is, and with ``line`` (malformed) added at
    the end of each split file, thousands of lines below the first examples; ``(good, bad)``."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(get_task(task).demo(), good)
    shutil.copytree(good, bad)
    for name in files:
        with (bad / name).open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
    return good, bad


def lines_of(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("limit", [1, 2, 5, 40])
def test_a_tree_file_read_to_a_limit_gives_the_first_examples_of_a_full_read(
    tmp_path: Path, limit: int
) -> None:
    good, bad = with_bad_tail("sst5", SST_FILES, tmp_path, "(3 (2 unbalanced")
    options = {"phrases": True, "min_tokens": 4, "max_tokens": 512}
    full, _ = read_tree_texts(good / "train.txt", **options)
    first, stats = read_tree_texts(bad / "train.txt", **options, limit=limit)
    assert first == full[:limit] and stats.examples == limit
    with pytest.raises(DataError) as info:
        read_tree_texts(bad / "train.txt", **options)
    assert info.value.line == lines_of(bad / "train.txt")


def test_sst5_limit_2_stops_before_a_malformed_line_far_below(tmp_path: Path) -> None:
    task = get_task("sst5")
    good, bad = with_bad_tail("sst5", SST_FILES, tmp_path, "(3 (2 unbalanced")
    full = task.build_recipe("mini", [], str(good))
    limited = task.build_recipe("mini", [], str(bad), 2)  # does not raise
    assert set(limited.splits) == set(full.splits) == {"train", "dev", "test"}
    for split, examples in full.splits.items():
        assert limited.splits[split] == examples[:2], split
        assert limited.read_stats[split].examples == 2
    with pytest.raises(DataError) as info:  # a full read reaches the malformed line
        task.build_recipe("mini", [], str(bad))
    assert info.value.line == lines_of(bad / "train.txt")


def test_sst5_random_vectors_read_the_whole_files(tmp_path: Path) -> None:
    """Random vectors are drawn per vocabulary row: a partial vocabulary would change them."""
    _, bad = with_bad_tail("sst5", SST_FILES, tmp_path, "(3 (2 unbalanced")
    with pytest.raises(DataError):
        get_task("sst5").build_recipe("mini", ["word_vectors=random:4"], str(bad), 2)


def test_snli_limit_stops_before_a_malformed_line_far_below(tmp_path: Path) -> None:
    task = get_task("snli")
    good, bad = with_bad_tail("snli", SNLI_FILES, tmp_path, "{not json")
    full = task.build_recipe("mini", [], str(good))
    limited = task.build_recipe("mini", [], str(bad), 2)  # does not raise
    for split, examples in full.splits.items():
        assert limited.splits[split] == examples[:2], split
    with pytest.raises(DataError) as info:
        task.build_recipe("mini", [], str(bad))
    assert info.value.line == lines_of(bad / SNLI_FILES[0])


def test_snli_counts_the_limit_in_pairs_the_policy_keeps(tmp_path: Path) -> None:
    """With ``max_tokens=20`` the 4th to 6th training pairs of the DEMO set are skipped: the
    first 5 kept pairs lie further down, and the limited read finds the same ones."""
    task = get_task("snli")
    good, bad = with_bad_tail("snli", SNLI_FILES, tmp_path, "{not json")
    overrides = ["max_tokens=20"]
    full = task.build_recipe("mini", overrides, str(good))
    limited = task.build_recipe("mini", overrides, str(bad), 5)
    assert limited.splits["train"] == full.splits["train"][:5]
    assert limited.skipped and sum(limited.skipped.values()) >= 3
    assert limited.read_stats["train"].examples == 5


def test_snli_vectors_drawn_for_the_gaps_read_the_whole_files(tmp_path: Path) -> None:
    """``fill_missing_words`` draws one vector per word without one, before the model's
    initialisation: the whole vocabulary decides those draws."""
    _, bad = with_bad_tail("snli", SNLI_FILES, tmp_path, "{not json")
    with pytest.raises(DataError):
        get_task("snli").build_recipe("mini", ["fill_missing_words=true"], str(bad), 2)
