"""The SNLI classifier's allennlp peer adapter (tasks/snli/peer.py): the data it writes keep
every pair, token and label, its configuration follows allennlp-models' esim.jsonnet /
esim_elmo.jsonnet, and the peer's outputs come back in the recipe's prediction format (nothing
here needs allennlp)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tasks.common.peer import PeerInputs, PeerRun
from tasks.snli.data import SnliExample, pair_tokens
from tasks.snli.peer import PEER, config, predictions, write_data
from tasks.snli.task import TASK


def recipe(max_tokens: int = 200) -> SimpleNamespace:
    train = [
        SnliExample(
            "t1",
            "A man runs.",
            "A person moves.",
            "entailment",
            ("A", "man", "runs", "."),
            ("A", "person", "moves", "."),
        ),
        SnliExample("t2", "Two dogs don't bark.", "Dogs sleep.", "neutral"),  # tokenized here
        SnliExample(
            "t3", "A cat.", "No cat.", "contradiction", ("A", "cat", "."), ("No", "cat", ".")
        ),
    ]
    dev = [
        SnliExample("d1", "A b c d", "e", "neutral", ("A", "b", "c", "d"), ("e",)),
        SnliExample("d2", "x y", "z", "entailment", ("x", "y"), ("z",)),
    ]

    def tokens(ex: SnliExample) -> tuple[tuple[str, ...], tuple[str, ...]]:
        premise, hypothesis = pair_tokens(ex)
        return premise[:max_tokens], hypothesis[:max_tokens]

    return SimpleNamespace(splits={"train": train, "dev": dev}, tokens=tokens)


def read_back(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_task_declares_its_peer() -> None:
    assert TASK.peer is PEER and PEER.model == "esim"
    assert "02480d86450dff1dfc2003f4ebd93d0347532a20" in PEER.source
    assert PEER.output_keys == ("label",) and PEER.metric_key == "accuracy"


def test_written_data_keep_every_pair_token_and_label(tmp_path: Path) -> None:
    r = recipe()
    files = write_data(r, tmp_path)
    assert sorted(files) == ["dev", "train"]
    for split, path in files.items():
        written = read_back(path)
        assert [w["pairID"] for w in written] == [ex.pair_id for ex in r.splits[split]]
        assert [w["gold_label"] for w in written] == [ex.label for ex in r.splits[split]]
        for w, ex in zip(written, r.splits[split], strict=True):
            # the whitespace tokenizer reads back the tokens the project's model reads
            assert (tuple(w["sentence1"].split()), tuple(w["sentence2"].split())) == r.tokens(ex)
    assert read_back(files["train"])[1]["sentence1"] == "Two dogs do n't bark ."


def test_sides_are_cut_as_the_project_cuts_them(tmp_path: Path) -> None:
    written = read_back(write_data(recipe(max_tokens=3), tmp_path)["dev"])
    assert written[0]["sentence1"] == "A b c"


def test_labels_the_snli_reader_cannot_read_are_refused(tmp_path: Path) -> None:
    r = recipe()
    r.splits["dev"].append(SnliExample("d3", "a", "b", "0", ("a",), ("b",)))
    with pytest.raises(ValueError, match="dev pair 'd3': label '0'; the snli reader reads only"):
        write_data(r, tmp_path)


def test_the_configuration_follows_esim_jsonnet_and_esim_elmo_jsonnet(tmp_path: Path) -> None:
    files = {"train": tmp_path / "train.jsonl", "dev": tmp_path / "dev.jsonl"}
    inputs = PeerInputs(tmp_path / "glove.txt", tmp_path / "o.json", tmp_path / "w.hdf5", 256)
    base = config(files, inputs, PeerRun(epochs=3, batch_size=32, seed=7, elmo=False), recipe())
    model = base["model"]
    assert model["type"] == "esim" and model["dropout"] == 0.5
    reader = base["dataset_reader"]
    assert reader["type"] == "snli" and reader["tokenizer"] == {"type": "whitespace"}
    assert reader["token_indexers"] == {"tokens": {"type": "single_id", "lowercase_tokens": True}}
    glove = model["text_field_embedder"]["token_embedders"]["tokens"]
    assert glove["pretrained_file"] == str(inputs.glove_text) and glove["trainable"] is True
    assert glove["embedding_dim"] == model["encoder"]["input_size"] == 50
    assert model["matrix_attention"] == {"type": "dot_product"}
    assert model["projection_feedforward"]["input_dim"] == 2400
    assert model["inference_encoder"]["input_size"] == 300
    assert model["output_feedforward"]["input_dim"] == 2400
    assert model["output_feedforward"]["dropout"] == 0.5
    assert model["output_logit"]["input_dim"] == 300 and model["output_logit"]["hidden_dims"] == 3
    assert len(model["initializer"]["regexes"]) == 6
    assert base["data_loader"] == {"batch_sampler": {"type": "bucket", "batch_size": 32}}
    assert base["validation_data_loader"] == {"batch_size": 32, "shuffle": False}
    trainer = base["trainer"]
    assert trainer["num_epochs"] == trainer["patience"] == 3
    assert trainer["optimizer"] == {"type": "adam", "lr": 0.0004} and trainer["grad_norm"] == 10.0
    # esim.jsonnet halves the rate on a dev plateau (built under torch 2.13 by peer_compat)
    assert trainer["learning_rate_scheduler"] == {
        "type": "reduce_on_plateau",
        "factor": 0.5,
        "mode": "max",
        "patience": 0,
    }
    assert trainer["checkpointer"]["keep_most_recent_by_count"] is None
    assert trainer["validation_metric"] == "+accuracy" and trainer["cuda_device"] == -1
    assert trainer["callbacks"] == [{"type": "peer_timing"}]
    assert base["random_seed"] == base["numpy_seed"] == base["pytorch_seed"] == 7
    assert base["validation_data_path"] == str(files["dev"]) and "test_data_path" not in base

    elmo = config(
        {**files, "test": tmp_path / "test.jsonl"},
        inputs,
        PeerRun(epochs=3, batch_size=32, seed=7, elmo=True),
        recipe(),
    )
    model = elmo["model"]
    # esim_elmo.jsonnet: ELMo alone at the encoder's input (no GloVe)
    assert elmo["dataset_reader"]["token_indexers"] == {"elmo": {"type": "elmo_characters"}}
    embedders = model["text_field_embedder"]["token_embedders"]
    assert list(embedders) == ["elmo"] and embedders["elmo"]["type"] == "elmo_token_embedder"
    assert embedders["elmo"]["options_file"] == str(inputs.elmo_options)
    assert embedders["elmo"]["dropout"] == 0.0 and embedders["elmo"]["do_layer_norm"] is False
    assert model["encoder"]["input_size"] == 256
    assert elmo["test_data_path"] == str(tmp_path / "test.jsonl")
    assert elmo["evaluate_on_test"] is False  # the test file only extends the vocabulary
    # the placement differs from the project's paper preset, and CHANGES says so
    assert TASK.sites_for("paper") == {"input", "output"}
    assert any("ELMo placement differs" in change for change in PEER.changes)


def test_predictions_come_back_per_pair_and_are_checked() -> None:
    dev = recipe().splits["dev"]
    outputs = [{"label": "neutral"}, {"label": "contradiction"}]
    assert predictions(outputs, dev) == {"d1": "neutral", "d2": "contradiction"}
    with pytest.raises(ValueError, match="1 pairs, the split has 2"):
        predictions(outputs[:1], dev)
    with pytest.raises(ValueError, match="pair 'd2': the peer's label 2 is no string"):
        predictions([{"label": "neutral"}, {"label": 2}], dev)


def test_written_labels_round_trip_through_the_peers_strings(tmp_path: Path) -> None:
    r = recipe()
    written = read_back(write_data(r, tmp_path)["dev"])
    outputs = [{"label": w["gold_label"]} for w in written]  # a peer predicting the gold label
    assert predictions(outputs, r.splits["dev"]) == {ex.pair_id: ex.label for ex in r.splits["dev"]}
