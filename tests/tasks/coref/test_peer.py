"""The coreference model's allennlp peer adapter (tasks/coref/peer.py): the CoNLL-2012 files it
writes read back to the recipe's documents and clusters (with the project's reader, and under the
constraints of allennlp's Ontonotes column parser), its configuration follows allennlp-models'
coref.jsonnet, and the peer's clusters come back in the recipe's prediction format, checked
(nothing here needs allennlp)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tasks.common.peer import PeerInputs, PeerRun
from tasks.coref.config import CorefConfig
from tasks.coref.data import CorefDocument, read_coref
from tasks.coref.peer import PEER, config, predictions, write_data, written_clusters
from tasks.coref.task import TASK


def _doc(
    doc_id: str, sentences: list[list[str]], clusters: list[list[tuple[int, int]]], **kw: Any
) -> CorefDocument:
    speakers = tuple(tuple(kw.get("speaker", "-") for _ in words) for words in sentences)
    return CorefDocument(
        document_id=doc_id,
        part=kw.get("part", 0),
        genre=doc_id.split("/", 1)[0],
        sentences=tuple(tuple(words) for words in sentences),
        speakers=speakers,
        clusters=tuple(tuple(c) for c in clusters),
        path=f"{doc_id}.conll",
        line=1,
    )


def recipe() -> SimpleNamespace:
    train = [
        # nested mentions of one cluster, a multi-token mention, a singleton, a mention crossing
        # the sentence boundary (tokens 4-5) that allennlp's reader cannot hold
        _doc(
            "nw/a",
            [["Anna", "saw", "her", "sister", "."], ["She", "New York", "waved", "."]],
            [[(0, 0), (2, 3), (5, 5)], [(2, 2)], [(6, 6)], [(4, 5)]],
            speaker="Mr Smith",
        ),
        _doc("nw/b", [["Nobody", "came", "."]], [], part=3),
    ]
    dev = [_doc("dev_novel", [["Ann", "met", "Bob", "."], ["He", "left", "."]], [[(2, 2), (4, 4)]])]
    return SimpleNamespace(config=CorefConfig(), splits={"train": train, "dev": dev})


def _allennlp_sentences(path: Path) -> list[list[list[str]]]:
    """Documents → sentences → rows, split as allennlp's Ontonotes iterator splits them."""
    documents: list[list[list[str]]] = []
    document: list[list[str]] = []
    rows: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rows.append(line)
        elif rows:
            document.append(rows)
            rows = []
        if line.startswith("#end document"):
            documents.append(document)
            document = []
    return documents


def _sentence_clusters(rows: list[str], offset: int) -> dict[int, list[tuple[int, int]]]:
    """The Ontonotes parser's coreference brackets of one sentence (a stack per cluster, emptied
    within the sentence)."""
    clusters: dict[int, list[tuple[int, int]]] = defaultdict(list)
    stacks: dict[int, list[int]] = defaultdict(list)
    for index, row in enumerate(rows):
        label = row.split()[-1]
        for segment in label.split("|") if label != "-" else ():
            if segment.startswith("(") and segment.endswith(")"):
                clusters[int(segment[1:-1])].append((offset + index, offset + index))
            elif segment.startswith("("):
                stacks[int(segment[1:])].append(index)
            else:
                start = stacks[int(segment[:-1])].pop()  # IndexError: opened in another sentence
                clusters[int(segment[:-1])].append((offset + start, offset + index))
    assert not any(stacks.values()), "a mention left open at the end of a sentence"
    return clusters


def test_the_task_declares_its_peer() -> None:
    assert TASK.peer is PEER and PEER.model == "coref" and PEER.metric_key == "coref_f1"
    assert "02480d86450dff1dfc2003f4ebd93d0347532a20" in PEER.source
    assert PEER.output_keys == ("clusters",)
    assert PEER.overrides == ("word_vectors=glove", "turian_vectors=")


def test_written_files_read_back_to_every_document_and_cluster(tmp_path: Path) -> None:
    r = recipe()
    files = write_data(r, tmp_path)
    assert sorted(files) == ["dev", "train"]
    for split, path in files.items():
        back = list(read_coref(path))
        assert [d.key for d in back] == [d.key for d in r.splits[split]]
        for got, document in zip(back, r.splits[split], strict=True):
            assert got.num_tokens == document.num_tokens
            assert got.sentences == tuple(
                tuple("_".join(w.split()) for w in words) for words in document.sentences
            )
            assert sorted(map(sorted, got.clusters)) == sorted(
                map(sorted, written_clusters(document))
            )
    first = r.splits["train"][0]
    # every cluster is kept except the mention that crosses the sentence boundary
    assert written_clusters(first) == [[(0, 0), (2, 3), (5, 5)], [(2, 2)], [(6, 6)]]
    assert list(read_coref(files["train"]))[0].speakers[0][0] == "Mr_Smith"


def test_written_files_meet_the_ontonotes_column_parser(tmp_path: Path) -> None:
    r = recipe()
    files = write_data(r, tmp_path)
    for split, path in files.items():
        documents = _allennlp_sentences(path)
        assert len(documents) == len(r.splits[split])
        for sentences, document in zip(documents, r.splits[split], strict=True):
            assert [len(rows) for rows in sentences] == [len(w) for w in document.sentences]
            clusters: dict[int, list[tuple[int, int]]] = defaultdict(list)
            offset = 0
            for rows in sentences:
                for index, row in enumerate(rows):
                    cells = row.split()
                    assert len(cells) == 12
                    assert int(cells[1]) == document.part and int(cells[2]) == index
                    assert cells[4] == "XX"  # no parse tree is assembled
                    assert cells[5].count("*") == 1 and cells[10] == "*"
                for number, spans in _sentence_clusters(rows, offset).items():
                    clusters[number] += spans
                offset += len(rows)
            got = sorted(sorted(spans) for spans in clusters.values())
            assert got == sorted(map(sorted, written_clusters(document)))


def test_the_configuration_follows_coref_jsonnet(tmp_path: Path) -> None:
    files = {"train": tmp_path / "train.gold_conll", "dev": tmp_path / "dev.gold_conll"}
    inputs = PeerInputs(tmp_path / "glove.txt", tmp_path / "o.json", tmp_path / "w.hdf5", 256)
    base = config(files, inputs, PeerRun(epochs=3, batch_size=1, seed=7, elmo=False), recipe())
    model = base["model"]
    assert model["type"] == "coref"
    assert (model["max_span_width"], model["spans_per_word"], model["max_antecedents"]) == (
        10,
        0.4,
        100,
    )
    assert model["feature_size"] == 20 and model["lexical_dropout"] == 0.5
    assert model["context_layer"]["input_size"] == 50 + 100
    assert model["context_layer"]["hidden_size"] == 200
    # coref.jsonnet's 1220 and 3680 for 300-d vectors: 800 + 400 + 20, 3 x 1220 + 20
    assert model["mention_feedforward"]["input_dim"] == 800 + 150 + 20
    assert model["antecedent_feedforward"]["input_dim"] == 3 * 970 + 20
    assert model["mention_feedforward"]["hidden_dims"] == 150
    assert model["mention_feedforward"]["dropout"] == 0.2
    embedders = model["text_field_embedder"]["token_embedders"]
    assert embedders["tokens"]["pretrained_file"] == str(inputs.glove_text)
    assert embedders["tokens"]["trainable"] is False
    chars = embedders["token_characters"]
    assert chars["embedding"] == {"num_embeddings": 262, "embedding_dim": 16}
    assert chars["encoder"]["num_filters"] == 100 and chars["encoder"]["ngram_filter_sizes"] == [5]
    reader, validation = base["dataset_reader"], base["validation_dataset_reader"]
    assert reader["max_sentences"] == 50 and "max_sentences" not in validation
    assert reader["token_indexers"]["tokens"] == {"type": "single_id", "lowercase_tokens": True}
    assert base["data_loader"]["batch_sampler"] == {
        "type": "bucket",
        "padding_noise": 0.0,
        "batch_size": 1,
    }
    assert base["validation_data_loader"]["batch_size"] == 1
    trainer = base["trainer"]
    assert trainer["num_epochs"] == trainer["patience"] == 3
    assert trainer["validation_metric"] == "+coref_f1" and trainer["grad_norm"] == 5.0
    assert trainer["learning_rate_scheduler"]["type"] == "reduce_on_plateau"
    assert trainer["optimizer"] == {"type": "adam"}
    assert base["random_seed"] == base["numpy_seed"] == base["pytorch_seed"] == 7
    assert "elmo" not in reader["token_indexers"] and "test_data_path" not in base

    elmo = config(
        {**files, "test": tmp_path / "test.gold_conll"},
        inputs,
        PeerRun(epochs=3, batch_size=1, seed=7, elmo=True),
        recipe(),
    )
    model = elmo["model"]
    assert model["context_layer"]["input_size"] == 150 + 256
    assert model["mention_feedforward"]["input_dim"] == 800 + 406 + 20
    assert model["antecedent_feedforward"]["input_dim"] == 3 * 1226 + 20
    assert elmo["validation_dataset_reader"]["token_indexers"]["elmo"] == {
        "type": "elmo_characters"
    }
    bilm = model["text_field_embedder"]["token_embedders"]["elmo"]
    assert bilm["weight_file"] == str(inputs.elmo_weights) and bilm["dropout"] == 0.0
    assert "regularizer" not in model
    assert elmo["evaluate_on_test"] is False


def test_other_batch_sizes_are_refused_and_many_characters_widen_the_embedding(
    tmp_path: Path,
) -> None:
    files = {"train": tmp_path / "t", "dev": tmp_path / "d"}
    inputs = PeerInputs(tmp_path / "glove.txt")
    with pytest.raises(ValueError, match="--batch-size 1, not 64"):
        config(files, inputs, PeerRun(epochs=1, batch_size=64, seed=0, elmo=False), recipe())
    r = recipe()
    train_chars = {c for d in r.splits["train"] for words in d.sentences for w in words for c in w}
    r.splits["dev"] = [_doc("many", [[chr(0x4E00 + i) for i in range(300)]], [])]
    out = config(files, inputs, PeerRun(epochs=1, batch_size=1, seed=0, elmo=False), r)
    chars = out["model"]["text_field_embedder"]["token_embedders"]["token_characters"]
    # every split's characters count (allennlp's vocabulary reads them all), + padding and OOV
    assert chars["embedding"]["num_embeddings"] == 300 + len(train_chars) + 2


def test_predictions_come_back_per_document_and_are_checked() -> None:
    dev = recipe().splits["dev"]
    outputs = [{"clusters": [[[2, 2], [4, 4]], []]}]
    assert predictions(outputs, dev) == {("dev_novel", 0): [[(2, 2), (4, 4)]]}
    with pytest.raises(ValueError, match="1 documents, the split has 2"):
        predictions(outputs, [*dev, *dev])
    with pytest.raises(ValueError, match="document dev_novel part 0 .*no clusters"):
        predictions([{"tags": []}], dev)
    with pytest.raises(ValueError, match=r"dev_novel part 0 .*\(6, 7\) lies outside its 7"):
        predictions([{"clusters": [[[6, 7]]]}], dev)
    with pytest.raises(ValueError, match=r"mention \[1, 'x'\] is not"):
        predictions([{"clusters": [[[1, "x"]]]}], dev)
    with pytest.raises(ValueError, match="repeats"):
        predictions([outputs[0], outputs[0]], [dev[0], dev[0]])
