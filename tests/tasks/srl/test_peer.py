"""The SRL tagger's allennlp peer adapter (tasks/srl/peer.py): the CoNLL-2012 files it writes give
allennlp's ``srl`` reader exactly one instance per project instance, in order, with every
argument span; its configuration follows allennlp-models' srl.jsonnet / srl_elmo.jsonnet; the
peer's outputs come back in the recipe's prediction format and the project's scorer scores them
(nothing here needs allennlp: the reader's rules are restated below)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tasks.common.peer import PeerInputs, PeerRun
from tasks.common.spans import tags_to_spans
from tasks.srl.data import SrlInstance
from tasks.srl.peer import PEER, config, predictions, write_data
from tasks.srl.task import TASK, SrlExample, setup
from tests.tasks.helpers import write_lines

# One document, four sentences: two relative-clause predicates and a two-token V; no predicate;
# a C- argument and two predicates; a predicate column without V (skipped by the project).
TRAIN = [
    "#begin document (nw/wsj/00/wsj_0001); part 000",
    "nw/x 0 0 The DT * - - - - * (ARG0* (ARG0* * -",
    "nw/x 0 1 man NN * - - - - * *) * * -",
    "nw/x 0 2 who WP * - - - - * (R-ARG0*) * * -",
    "nw/x 0 3 left VBD * leave 01 - - * (V*) *) * -",
    "nw/x 0 4 said VBD * say 01 - - * * (V*) * -",
    "nw/x 0 5 he PRP * - - - - * * (ARG1* (ARG0*) -",
    "nw/x 0 6 would MD * - - - - * * * (ARGM-MOD*) -",
    "nw/x 0 7 come VB * come 01 - - * * * (V* -",
    "nw/x 0 8 back RB * - - - - * * *) *) -",
    "nw/x 0 9 . . * - - - - * * * * -",
    "",
    "nw/x 0 0 Hello UH * - - - - * -",
    "",
    "nw/x 0 0 Prices NNS * - - - - * (ARG1*) (ARG1*) -",
    "nw/x 0 1 , , * - - - - * * * -",
    "nw/x 0 2 he PRP * - - - - * (ARG0*) * -",
    "nw/x 0 3 said VBD * say 01 - - * (V*) * -",
    "nw/x 0 4 , , * - - - - * * * -",
    "nw/x 0 5 rose VBD * rise 01 - - * (C-ARG1*) (V*) -",
    "nw/x 0 6 . . * - - - - * * * -",
    "",
    "nw/x 0 0 It PRP * - - - - * (ARG1*) (ARG0*) -",
    "nw/x 0 1 works VBZ * work 01 - - * * (V*) -",
    "",
    "#end document",
]
DEV = [
    "#begin document (nw/wsj/00/wsj_0002); part 001",
    "nw/y 1 0 John NNP * - - - - * (ARG0*) -",
    "nw/y 1 1 saw VBD * see 01 - - * (V*) -",
    "nw/y 1 2 Mary NNP * - - - - * (ARG1*) -",
    "",
    "#end document",
]
WSJ = ("data", "english", "annotations", "nw", "wsj", "00")
INPUTS = PeerInputs(Path("/g/glove.txt"), Path("/e/options.json"), Path("/e/weights.hdf5"), 256)


def data_folder(root: Path) -> Path:
    for split in ("train", "development"):
        root.joinpath(split, *WSJ).mkdir(parents=True)
    write_lines(root.joinpath("train", *WSJ, "wsj_0001.v4_gold_conll"), TRAIN)
    write_lines(root.joinpath("development", *WSJ, "wsj_0002.v4_gold_conll"), DEV)
    return root


@pytest.fixture
def recipe(tmp_path: Path) -> Any:
    return setup("paper", ["word_vectors=random:4"], str(data_folder(tmp_path / "data")))


def allennlp_read(folder: Path) -> list[tuple[list[str], list[str], list[int]]]:
    """(words, tags, verb indicator) of every instance allennlp 2.10.1's ``srl`` reader makes
    of the ``*gold_conll`` files below ``folder``: its ``Ontonotes`` rules restated (blank and
    ``#`` lines end a sentence; columns 11 to the next-to-last are bracket columns, the first of
    them the named entities; a bracket opens ``B-label``, stays ``I-label`` until a ``)``; a
    frame per predicate column, paired with the words holding ``(V`` in any predicate column;
    a sentence without frames gives one all-``O`` instance without a verb)."""
    instances = []
    for path in sorted(folder.rglob("*gold_conll")):
        rows: list[list[str]] = []
        for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
            line = line.strip()
            if line and not line.startswith("#"):
                rows.append(line.split())
                continue
            if not rows:
                continue
            words = [row[3] for row in rows]
            columns = [[row[c] for row in rows] for c in range(10, len(rows[0]) - 1)]
            labels = []
            for column in columns:
                tags, current = [], None
                for cell in column:
                    label = cell.strip("()*")
                    if "(" in cell:
                        tags.append(f"B-{label}")
                        current = label
                    else:
                        tags.append("O" if current is None else f"I-{current}")
                    if ")" in cell:
                        current = None
                labels.append(tags)
            verbs = [i for i, row in enumerate(rows) if any("(V" in c for c in row[11:-1])]
            frames = [tags for _, tags in zip(verbs, labels[1:], strict=False)]
            if not frames:
                instances.append((words, ["O"] * len(words), [0] * len(words)))
            for tags in frames:
                instances.append((words, tags, [int(t[-2:] == "-V") for t in tags]))
            rows = []
    return instances


def test_the_task_declares_its_peer() -> None:
    assert TASK.peer is PEER and PEER.model == "srl"
    assert "02480d86450dff1dfc2003f4ebd93d0347532a20" in PEER.source
    assert PEER.metric_key == "f1-measure-overall" and PEER.output_keys[0] == "tags"
    assert PEER.overrides == ("word_vectors=glove",)  # the peer reads the embedded 6B 50-d


def test_written_files_give_one_instance_per_project_instance(recipe: Any, tmp_path: Path) -> None:
    assert len(recipe.sentences["train"]) == 4 and len(recipe.splits["train"]) == 6
    files = write_data(recipe, tmp_path / "peer")
    assert files == {"train": tmp_path / "peer" / "train", "dev": tmp_path / "peer" / "dev"}
    for split, folder in files.items():
        assert [p.name for p in folder.iterdir()] == [f"{split}.gold_conll"]  # one file: order
        read = allennlp_read(folder)
        examples = recipe.splits[split]
        assert len(read) == len(examples)  # no predicate-less instance, no lost frame
        for (words, tags, indicator), example in zip(read, examples, strict=True):
            assert words == list(example.tokens)
            assert tags == list(example.instance.tags)
            assert tags_to_spans(tags, "IOB2") == tags_to_spans(example.instance.tags, "IOB2")
            assert indicator[example.instance.predicate_index] == 1
    train = allennlp_read(files["train"])
    assert [sum(i) for _, _, i in train] == [1, 1, 2, 1, 1, 1]  # "come back": both V tokens
    assert "C-ARG1" in {s.label for s in tags_to_spans(train[3][1], "IOB2")}
    lines = (files["train"] / "train.gold_conll").read_text(encoding="utf-8").splitlines()
    token_lines = [line.split(" ") for line in lines if line and not line.startswith("#")]
    assert {cells[4] for cells in token_lines} == {"XX"}  # no parse tree is built
    assert [len(c) for c in token_lines[:1] + token_lines[10:11] + token_lines[-1:]] == [15, 14, 13]
    assert lines[0] == "#begin document (nw/wsj/00/wsj_0001); part 000"
    assert "Hello" not in {cells[3] for cells in token_lines}  # no instance, not written
    dev = (files["dev"] / "dev.gold_conll").read_text(encoding="utf-8").splitlines()
    assert dev[0] == "#begin document (nw/wsj/00/wsj_0002); part 001" and dev[-1] == "#end document"


def instance(sentence: int, tokens: tuple[str, ...], predicate: int, tags: tuple[str, ...]) -> Any:
    return SrlExample(SrlInstance(sentence, tokens, predicate, tags, "nw"), "train")


def synthetic(*examples: Any) -> SimpleNamespace:
    sentence = SimpleNamespace(document_id="nw/x", part=0)
    return SimpleNamespace(splits={"train": list(examples)}, sentences={"train": [sentence] * 3})


def test_unwritable_instances_are_refused_and_spaces_become_underscores(tmp_path: Path) -> None:
    words = ("New York", "grew")
    files = write_data(synthetic(instance(0, words, 1, ("B-ARG1", "B-V"))), tmp_path / "a")
    assert allennlp_read(files["train"])[0][0] == ["New_York", "grew"]
    assert "dev" not in files
    with pytest.raises(ValueError, match="sentence 0, predicate at token 0: tag 'B-ARG1'"):
        write_data(synthetic(instance(0, words, 0, ("B-ARG1", "B-V"))), tmp_path / "b")
    twice = [instance(0, words, 1, ("B-ARG1", "B-V"))] * 2
    with pytest.raises(ValueError, match="a second instance of the same predicate"):
        write_data(synthetic(*twice), tmp_path / "c")


def test_instances_of_one_sentence_out_of_order_are_written_in_their_order(tmp_path: Path) -> None:
    words = ("a", "b")
    examples = [
        instance(0, words, 0, ("B-V", "O")),
        instance(1, ("c",), 0, ("B-V",)),
        instance(0, words, 1, ("B-ARG0", "B-V")),
    ]
    read = allennlp_read(write_data(synthetic(*examples), tmp_path)["train"])
    assert [tags for _, tags, _ in read] == [list(ex.instance.tags) for ex in examples]


def test_the_configuration_follows_srl_jsonnet_and_srl_elmo_jsonnet(tmp_path: Path) -> None:
    files = {"train": tmp_path / "train", "dev": tmp_path / "dev"}
    base = config(files, INPUTS, PeerRun(epochs=3, batch_size=80, seed=7, elmo=False), None)
    model = base["model"]
    assert model["type"] == "srl" and model["binary_feature_dim"] == 100
    assert model["encoder"] == {
        "type": "alternating_lstm",
        "input_size": 50 + 100,
        "hidden_size": 300,
        "num_layers": 8,
        "recurrent_dropout_probability": 0.1,
        "use_highway": True,
    }
    assert model["initializer"]["regexes"] == [
        ["tag_projection_layer.*weight", {"type": "orthogonal"}]
    ]
    embedder = model["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["pretrained_file"] == str(INPUTS.glove_text) and embedder["trainable"]
    assert base["dataset_reader"] == {
        "type": "srl",
        "token_indexers": {"tokens": {"type": "single_id", "lowercase_tokens": True}},
    }
    assert base["data_loader"] == {"batch_sampler": {"type": "bucket", "batch_size": 80}}
    trainer = base["trainer"]
    assert trainer["optimizer"] == {"type": "adadelta", "rho": 0.95}
    assert trainer["grad_clipping"] == 1.0 and "grad_norm" not in trainer
    assert trainer["validation_metric"] == "+f1-measure-overall"
    assert trainer["num_epochs"] == trainer["patience"] == 3
    assert base["train_data_path"] == str(files["train"]) and "test_data_path" not in base
    assert "regularizer" not in model

    elmo = config(files, INPUTS, PeerRun(epochs=3, batch_size=80, seed=7, elmo=True), None)
    model = elmo["model"]
    assert model["encoder"]["input_size"] == 256 + 100  # ELMo alone, as srl_elmo.jsonnet
    assert model["encoder"]["use_input_projection_bias"] is False
    assert elmo["dataset_reader"]["token_indexers"] == {"elmo": {"type": "elmo_characters"}}
    embedders = model["text_field_embedder"]["token_embedders"]
    assert list(embedders) == ["elmo"]
    assert embedders["elmo"]["options_file"] == str(INPUTS.elmo_options)
    assert embedders["elmo"]["dropout"] == 0.1 and embedders["elmo"]["do_layer_norm"] is False
    assert model["regularizer"]["regexes"] == [
        [".*scalar_parameters.*", {"type": "l2", "alpha": 0.001}]
    ]
    assert elmo["random_seed"] == elmo["numpy_seed"] == elmo["pytorch_seed"] == 7


def test_predictions_come_back_keyed_by_predicate_and_are_checked(recipe: Any) -> None:
    dev = recipe.splits["dev"]
    outputs = [{"tags": ["B-ARG0", "B-V", "B-ARG1"], "verb": "saw"}]
    assert predictions(outputs, dev) == {(0, 1): ("B-ARG0", "B-V", "B-ARG1")}
    with pytest.raises(ValueError, match="the peer tagged 1 predicates, the split has 2"):
        predictions(outputs, [*dev, *dev])
    with pytest.raises(
        ValueError, match=r"dev sentence 0, predicate at token 1\): the peer gave 2"
    ):
        predictions([{"tags": ["O", "B-V"]}], dev)
    with pytest.raises(ValueError, match="verb 'Mary' is not the instance's 'saw'"):
        predictions([{**outputs[0], "verb": "Mary"}], dev)


def test_the_projects_scorer_scores_the_peers_predictions(recipe: Any) -> None:
    train = recipe.splits["train"]
    outputs = [{"tags": list(ex.instance.tags)} for ex in train]
    assert recipe.score(predictions(outputs, train), train)["f1"] == 1.0
    outputs[0] = {"tags": ["O"] * len(train[0].tokens)}  # the first proposition's 2 args missed
    assert recipe.score(predictions(outputs, train), train)["recall"] < 1.0
