"""The SST-5 classifier's allennlp peer adapter (tasks/sst5/peer.py): the data it writes keep
every example, token and label, its configuration follows allennlp-models'
biattentive_classification_network(_elmo).jsonnet, and the peer's outputs come back in the
recipe's prediction format (nothing here needs allennlp)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from tasks.common.peer import PeerInputs, PeerRun
from tasks.sst5.data import TREE_LABELS, TextExample
from tasks.sst5.peer import PEER, config, predictions, write_data
from tasks.sst5.task import TASK


def recipe(layout: str = "trees") -> SimpleNamespace:
    train = [
        TextExample(1, ("It", "'s", "a", "fine", "-LRB-", "film", "-RRB-"), 3),
        TextExample(1, ("a", "fine", "-LRB-", "film"), 4, root=False),  # a phrase
        TextExample(2, ("Dull",), 0),
    ]
    dev = [TextExample(1, ("Not", "good", "."), 1), TextExample(2, ("So", "so"), 2)]
    labels = TREE_LABELS if layout == "trees" else ("neg", "neutral", "pos", "x", "y")
    return SimpleNamespace(layout=layout, labels=labels, splits={"train": train, "dev": dev})


def read_back(path: Path, layout: str) -> list[tuple[tuple[str, ...], str]]:
    """(tokens, label) of every line as the peer's reader takes it (nltk reads a flat tree as
    its label and leaves; text_classification_json splits on whitespace)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if layout == "trees":
            match = re.fullmatch(r"\((\S+) ([^()]+)\)", line)
            assert match is not None, line
            out.append((tuple(match.group(2).split()), match.group(1)))
        else:
            item = json.loads(line)
            out.append((tuple(item["text"].split()), item["label"]))
    return out


def test_the_task_declares_its_peer() -> None:
    assert TASK.peer is PEER and PEER.model == "bcn"
    assert "02480d86450dff1dfc2003f4ebd93d0347532a20" in PEER.source
    assert PEER.output_keys == ("label",) and PEER.metric_key == "accuracy"


@pytest.mark.parametrize(("layout", "suffix"), [("trees", ".txt"), ("jsonl", ".jsonl")])
def test_written_data_keep_every_example_token_and_label(
    tmp_path: Path, layout: str, suffix: str
) -> None:
    r = recipe(layout)
    files = write_data(r, tmp_path)
    assert sorted(files) == ["dev", "train"]
    for split, path in files.items():
        assert path.suffix == suffix
        written = read_back(path, layout)
        assert written == [(ex.tokens, str(ex.label)) for ex in r.splits[split]]
    if layout == "trees":  # the phrase is its own instance: exactly the project's examples
        second = files["train"].read_text(encoding="utf-8").splitlines()[1]
        assert second == "(4 a fine -LRB- film)"


def test_a_bracket_inside_a_tree_token_is_refused(tmp_path: Path) -> None:
    r = recipe()
    r.splits["dev"].append(TextExample(3, ("a(b",), 2))
    with pytest.raises(ValueError, match=r"dev line 3: token 'a\(b'"):
        write_data(r, tmp_path)


def test_the_configuration_follows_the_bcn_files(tmp_path: Path) -> None:
    files = {"train": tmp_path / "train.txt", "dev": tmp_path / "dev.txt"}
    inputs = PeerInputs(tmp_path / "glove.txt", tmp_path / "o.json", tmp_path / "w.hdf5", 256)
    base = config(files, inputs, PeerRun(epochs=3, batch_size=32, seed=7, elmo=False), recipe())
    model = base["model"]
    assert model["type"] == "bcn" and "elmo" not in model and "use_input_elmo" not in model
    assert base["dataset_reader"] == base["validation_dataset_reader"]
    assert base["dataset_reader"]["type"] == "sst_tokens"
    assert base["dataset_reader"]["use_subtrees"] is False  # the phrases are written out
    assert base["dataset_reader"]["token_indexers"] == {
        "tokens": {"type": "single_id", "lowercase_tokens": True}
    }
    glove = model["text_field_embedder"]["token_embedders"]["tokens"]
    assert glove["pretrained_file"] == str(inputs.glove_text) and glove["trainable"] is False
    assert glove["embedding_dim"] == model["pre_encode_feedforward"]["input_dim"] == 50
    assert model["embedding_dropout"] == 0.25
    assert model["encoder"]["input_size"] == 300
    assert model["integrator"]["input_size"] == 1800
    assert model["output_layer"]["input_dim"] == 2400
    assert model["output_layer"]["output_dims"] == [1200, 600, 5]  # 0-4 all in the data
    assert model["output_layer"]["dropout"] == [0.2, 0.3, 0.0]
    assert base["data_loader"] == {"batch_sampler": {"type": "bucket", "batch_size": 32}}
    assert base["validation_data_loader"] == {"batch_size": 32, "shuffle": False}
    trainer = base["trainer"]
    assert trainer["num_epochs"] == trainer["patience"] == 3
    assert trainer["optimizer"] == {"type": "adam", "lr": 0.001} and trainer["grad_norm"] == 5.0
    assert trainer["checkpointer"]["keep_most_recent_by_count"] is None
    assert trainer["validation_metric"] == "+accuracy" and trainer["cuda_device"] == -1
    assert trainer["callbacks"] == [{"type": "peer_timing"}]
    assert base["random_seed"] == base["numpy_seed"] == base["pytorch_seed"] == 7
    assert base["validation_data_path"] == str(files["dev"]) and "test_data_path" not in base

    elmo = config(
        {**files, "test": tmp_path / "test.txt"},
        inputs,
        PeerRun(epochs=3, batch_size=32, seed=7, elmo=True),
        recipe(),
    )
    model = elmo["model"]
    assert elmo["dataset_reader"]["token_indexers"]["elmo"] == {"type": "elmo_characters"}
    assert elmo["validation_dataset_reader"]["token_indexers"]["elmo"] == {
        "type": "elmo_characters"
    }
    assert "elmo" not in model["text_field_embedder"]["token_embedders"]  # bcn's own Elmo
    assert model["pre_encode_feedforward"]["input_dim"] == 50 + 256
    assert model["output_layer"]["input_dim"] == 2400  # not at the integrator's output
    assert model["embedding_dropout"] == 0.5
    assert model["elmo"]["options_file"] == str(inputs.elmo_options)
    assert model["elmo"]["weight_file"] == str(inputs.elmo_weights)
    assert model["elmo"]["dropout"] == 0.0 and model["elmo"]["num_output_representations"] == 1
    # bcn_elmo's placement is the project's paper preset's
    assert TASK.sites_for("paper") == {"input"} and TASK.elmo_dropout_for("paper") == 0.0
    assert model["use_input_elmo"] is True and model["use_integrator_output_elmo"] is False
    assert elmo["test_data_path"] == str(tmp_path / "test.txt")
    assert elmo["evaluate_on_test"] is False  # the test file only extends the vocabulary


def test_plain_sentences_read_as_text_classification_json(tmp_path: Path) -> None:
    r = recipe("jsonl")
    r.splits = {s: [ex for ex in v if ex.label in (0, 2)] for s, v in r.splits.items()}
    files = {"train": tmp_path / "train.jsonl", "dev": tmp_path / "dev.jsonl"}
    run = PeerRun(epochs=1, batch_size=8, seed=0, elmo=False)
    out = config(files, PeerInputs(tmp_path / "glove.txt"), run, r)
    assert out["dataset_reader"]["type"] == "text_classification_json"
    assert out["dataset_reader"]["tokenizer"] == {"type": "whitespace"}  # not spaCy
    assert out["model"]["output_layer"]["output_dims"] == [1200, 600, 2]  # the labels present


def test_predictions_come_back_as_label_ids_and_are_checked() -> None:
    dev = recipe().splits["dev"]
    assert predictions([{"label": "1"}, {"label": "4"}], dev) == [1, 4]
    with pytest.raises(ValueError, match="1 texts, the split has 2"):
        predictions([{"label": "1"}], dev)
    with pytest.raises(ValueError, match=r"text 2 \(line 2\): the peer's label 'neg'"):
        predictions([{"label": "1"}, {"label": "neg"}], dev)


def test_written_labels_round_trip_through_the_peers_strings(tmp_path: Path) -> None:
    r = recipe("jsonl")
    written = read_back(write_data(r, tmp_path)["dev"], "jsonl")
    outputs = [{"label": label} for _, label in written]  # a peer that predicts the gold label
    assert predictions(outputs, r.splits["dev"]) == [ex.label for ex in r.splits["dev"]]
