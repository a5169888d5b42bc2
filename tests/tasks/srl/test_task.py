"""SRL through the task protocol: presets, recipe pieces, the gold props file written beside the
predictions, scores of gold and subsets, and unit ids (the shared properties, learning included,
are in tests/contract/test_tasks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.representations import Layers
from tasks.srl.config import GLOVE_6B_100D
from tasks.srl.evaluate import main as evaluate_main
from tasks.srl.task import TASK, VERSION, SrlRecipe, setup
from tests.contract.helpers import adjacent_guess
from tests.tasks.helpers import run_cli

TINY = ("word_vectors=random:4", "hidden=4", "layers=2", "predicate_dim=2")


@pytest.fixture(scope="module")
def recipe() -> SrlRecipe:
    return setup("mini", TINY, None)


def test_presets_follow_the_paper_and_the_spec() -> None:
    paper, mini = TASK.configure("paper", ()), TASK.configure("mini", ())
    assert (paper.layers, paper.hidden, paper.predicate_dim) == (8, 300, 100)
    assert paper.recurrent_dropout == mini.recurrent_dropout == 0.1
    assert paper.word_vectors == GLOVE_6B_100D and paper.train_word_vectors
    opt = paper.train.optimizer
    assert (opt.name, opt.lr, opt.rho, opt.eps) == ("adadelta", 1.0, 0.95, 1e-6)
    assert paper.train.clip_value == 1.0 and paper.train.clip_norm is None
    assert paper.train.batch_size == 80
    assert (paper.train.epochs, paper.train.patience) == (500, 200)
    assert (mini.layers, mini.hidden, mini.word_vectors) == (4, 64, "glove")
    assert mini.train.epochs < paper.train.epochs and mini.train.patience is not None
    with pytest.raises(ValueError, match="no preset 'huge'; choose mini, paper"):
        TASK.configure("huge", ())


def test_task_spec_is_the_papers_elmo_configuration() -> None:
    assert TASK.version == VERSION and TASK.presets == ("mini", "paper")
    assert TASK.default_sites == frozenset({"input"})
    assert TASK.default_mix.lam == 0.001 and TASK.default_mix.mode == "all"
    assert TASK.elmo_dropout == 0.1 and TASK.table_rows[0].metric == TASK.metric


def test_paper_preset_refuses_without_its_glove_file() -> None:
    with pytest.raises(FileNotFoundError, match=r"--glove PATH/glove\.6B\.100d\.txt"):
        setup("paper", (), None)


def test_recipe_reads_the_demo_splits(recipe: SrlRecipe) -> None:
    assert set(recipe.splits) == {"train", "dev", "test"}
    assert len(recipe.splits["train"]) > 2500 and len(recipe.splits["dev"]) > 400
    assert recipe.labels[0] == "O" and "B-V" in recipe.labels
    assert recipe.stats["train"].examples == len(recipe.splits["train"])
    examples = recipe.splits["dev"][:3]
    batch = recipe.collate(examples, lambda seqs: Layers.empty([len(x) for x in seqs]))
    lengths = [len(ex.tokens) for ex in examples]
    assert batch.words.shape == batch.mask.shape == (3, max(lengths))
    assert batch.mask.sum(1).tolist() == lengths
    assert batch.predicates.sum(1).tolist() == [1, 1, 1]
    for row, ex in enumerate(examples):
        assert batch.predicates[row, ex.instance.predicate_index] == 1
        tags = [recipe.labels[i] for i in batch.tags[row, : lengths[row]].tolist()]  # type: ignore[index]
        assert tuple(tags) == ex.instance.tags
    assert recipe.sequences(examples) == [list(ex.tokens) for ex in examples]


def test_max_length_skips_and_counts_long_sentences() -> None:
    short = setup("mini", (*TINY, "max_length=12"), None)
    assert all(len(ex.tokens) <= 12 for ex in short.splits["train"])
    assert short.stats["train"].skipped["sentence_too_long"] > 0
    assert len(short.sentences["train"]) == len(setup("mini", TINY, None).sentences["train"])


def test_the_gold_props_written_beside_the_predictions_score_them(
    recipe: SrlRecipe, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``<path>.gold.props``: the gold of the written propositions, beside them (the task
    contract scores the split with ``--conll-gold`` and its CoNLL folder)."""
    dev = recipe.splits["dev"]
    predictions = adjacent_guess(dev)
    ours = recipe.score(predictions, dev)
    assert 0.05 < ours["f1"] < 0.6
    path = recipe.write_predictions(predictions, dev, tmp_path / "predictions-dev")
    assert path.suffix == ".props"
    gold = path.with_suffix(".gold.props")
    status, report, _ = run_cli(evaluate_main, [str(gold), str(path)], capsys)
    assert status == 0 and report["f1"] == pytest.approx(100 * ours["f1"], abs=1e-9)
    assert report["precision"] == pytest.approx(100 * ours["precision"], abs=1e-9)


def test_gold_scores_one_and_subsets_score_their_own_propositions(recipe: SrlRecipe) -> None:
    dev = recipe.splits["dev"]
    gold = {ex.key: ex.instance.tags for ex in dev}
    assert recipe.score(gold, dev)["f1"] == pytest.approx(1.0)
    subset = dev[:50]  # may cut a sentence's predicates: only these propositions count
    assert recipe.score({ex.key: gold[ex.key] for ex in subset}, subset)["f1"] == 1.0
    with pytest.raises(ValueError, match="one split"):
        recipe.score(gold, [dev[0], recipe.splits["test"][0]])


def test_unit_ids_are_the_sentences_document_part_and_index(recipe: SrlRecipe) -> None:
    """A unit is a sentence (all its propositions): id ``DOCUMENT_PART:INDEX``, unique and the
    same for two different predictions on the same data."""
    dev = recipe.splits["dev"]
    guess = recipe.unit_statistics(adjacent_guess(dev), dev)
    gold = recipe.unit_statistics({ex.key: ex.instance.tags for ex in dev}, dev)
    assert guess.ids == gold.ids and guess.rows != gold.rows
    sentences = recipe.sentences["dev"]
    assert gold.ids == tuple(f"{s.document_id}_{s.part}:{s.index}" for s in sentences)
    assert len(set(gold.ids)) == len(sentences) > len({s.document_id for s in sentences})
    assert gold.ids[0] == "demo/austen/development_0000_0:0"
    subset = recipe.unit_statistics(adjacent_guess(dev[:3]), dev[:3])
    assert subset.ids == gold.ids  # every sentence of the split, whatever the examples


def test_unit_ids_of_a_repeated_document_are_disambiguated_in_order(recipe: SrlRecipe) -> None:
    """The same document part read twice (two files sharing an id) repeats sentence ids."""
    from tasks.srl.task import unit_ids

    first, second = recipe.sentences["dev"][:2]
    ids = unit_ids([first, second, first, first])
    key = f"{first.document_id}_{first.part}"
    assert ids == (f"{key}:0", f"{key}:1", f"{key}:0#2", f"{key}:0#3")
