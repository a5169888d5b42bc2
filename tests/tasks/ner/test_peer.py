"""The NER tagger's allennlp peer adapter (tasks/ner/peer.py): the data it writes keep every
chunk, its configuration follows allennlp-models' ner.jsonnet / ner_elmo.jsonnet, and the peer's
outputs come back in the recipe's prediction format (nothing here needs allennlp)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tasks.common.peer import PeerInputs, PeerRun
from tasks.common.spans import convert, tags_to_spans
from tasks.ner.data import TaggedSentence
from tasks.ner.peer import PEER, config, predictions, write_data
from tasks.ner.task import TASK


def recipe(encoding: str | None = "BIOUL") -> SimpleNamespace:
    bioul = [
        TaggedSentence(("New York", "is", "big"), ("U-LOC", "O", "O"), 1, "train.txt"),
        TaggedSentence(("John", "Smith", "ran", "Mary"), ("B-PER", "L-PER", "O", "U-PER"), 5),
    ]
    dev = [TaggedSentence(("Ann", "Lee", "Bob"), ("B-PER", "L-PER", "U-PER"), 1, "dev.txt")]
    return SimpleNamespace(encoding=encoding, splits={"train": bioul, "dev": dev})


def read_columns(path: Path) -> list[list[list[str]]]:
    sentences, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if current:
                sentences.append(current)
            current = []
        else:
            current.append(line.split(" "))
    return sentences


def test_the_task_declares_its_peer() -> None:
    assert TASK.peer is PEER and PEER.model == "crf_tagger"
    assert "02480d86450dff1dfc2003f4ebd93d0347532a20" in PEER.source


def test_written_data_keep_every_chunk_in_iob1_and_four_columns(tmp_path: Path) -> None:
    r = recipe()
    files = write_data(r, tmp_path)
    assert sorted(files) == ["dev", "train"]
    for split, path in files.items():
        written = read_columns(path)
        assert len(written) == len(r.splits[split])
        for columns, sentence in zip(written, r.splits[split], strict=True):
            assert all(len(c) == 4 for c in columns)  # conll2003: WORD POS CHUNK TAG
            assert all(c[2] == "O" for c in columns)  # the reader converts the chunk column too
            tags = [c[3] for c in columns]
            assert tags_to_spans(tags, "IOB1") == tags_to_spans(sentence.tags, "BIOUL")
    first = read_columns(files["train"])[0]
    assert first[0][0] == "New_York"  # a space inside a word would split the columns
    # IOB1: B- only where a chunk directly follows one of its type
    assert [c[3] for c in read_columns(files["train"])[1]] == ["I-PER", "I-PER", "O", "I-PER"]
    assert [c[3] for c in read_columns(files["dev"])[0]] == ["I-PER", "I-PER", "B-PER"]


def test_plain_tags_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="chunk tags"):
        write_data(recipe(encoding=None), tmp_path)


def test_the_configuration_follows_ner_jsonnet_and_ner_elmo_jsonnet(tmp_path: Path) -> None:
    files = {"train": tmp_path / "train.conll", "dev": tmp_path / "dev.conll"}
    inputs = PeerInputs(tmp_path / "glove.txt", tmp_path / "o.json", tmp_path / "w.hdf5", 256)
    base = config(files, inputs, PeerRun(epochs=3, batch_size=32, seed=7, elmo=False), recipe())
    assert base["model"]["type"] == "crf_tagger" and "regularizer" not in base["model"]
    assert base["model"]["encoder"]["input_size"] == 50 + 128
    assert base["data_loader"] == {"batch_size": 32, "shuffle": True}
    assert base["trainer"]["num_epochs"] == base["trainer"]["patience"] == 3
    assert base["trainer"]["checkpointer"]["keep_most_recent_by_count"] is None
    assert base["random_seed"] == base["numpy_seed"] == base["pytorch_seed"] == 7
    assert "test_data_path" not in base and "elmo" not in base["dataset_reader"]["token_indexers"]
    embedders = base["model"]["text_field_embedder"]["token_embedders"]
    assert embedders["tokens"]["pretrained_file"] == str(inputs.glove_text)

    elmo = config(
        {**files, "test": tmp_path / "test.conll"},
        inputs,
        PeerRun(epochs=3, batch_size=32, seed=7, elmo=True),
        recipe(),
    )
    assert elmo["model"]["encoder"]["input_size"] == 50 + 128 + 256
    assert elmo["dataset_reader"]["token_indexers"]["elmo"] == {"type": "elmo_characters"}
    bilm = elmo["model"]["text_field_embedder"]["token_embedders"]["elmo"]
    assert bilm["options_file"] == str(inputs.elmo_options) and bilm["dropout"] == 0.0
    assert elmo["model"]["regularizer"]["regexes"][0][1] == {"type": "l2", "alpha": 0.1}
    assert elmo["test_data_path"] == str(tmp_path / "test.conll")
    assert elmo["evaluate_on_test"] is False  # the test file only extends the vocabulary


def test_predictions_come_back_per_sentence_and_are_checked() -> None:
    dev = recipe().splits["dev"]
    outputs = [{"tags": ["B-PER", "L-PER", "U-PER"]}]
    assert predictions(outputs, dev) == [["B-PER", "L-PER", "U-PER"]]
    with pytest.raises(ValueError, match="1 sentences, the split has 2"):
        predictions(outputs, [*dev, *dev])
    with pytest.raises(ValueError, match=r"dev.txt:1\): the peer gave 2 tags for 3 words"):
        predictions([{"tags": ["O", "O"]}], dev)


def test_the_written_tags_convert_back_to_the_recipes_encoding(tmp_path: Path) -> None:
    r = recipe()
    written = read_columns(write_data(r, tmp_path)["train"])
    for columns, sentence in zip(written, r.splits["train"], strict=True):
        assert convert([c[3] for c in columns], "IOB1", "BIOUL") == list(sentence.tags)
