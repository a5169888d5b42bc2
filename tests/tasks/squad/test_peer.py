"""SQuAD's allennlp peer adapter (tasks/squad/peer.py): the data it writes keep every question,
token and gold span, grouped by paragraph; its configuration follows allennlp-models'
dialog_qa.jsonnet with the paper's widths and training; the peer's token spans come back as
the recipe's answer texts (nothing here needs allennlp)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tasks.common.peer import PeerInputs, PeerRun
from tasks.squad.data import Answer, SquadExample
from tasks.squad.peer import MAX_ANSWER_TOKENS, PEER, config, predictions, write_data
from tasks.squad.task import TASK


def example(qid: str, context: str, question: str, span: tuple[int, int]) -> SquadExample:
    """An example whose tokens are the whitespace words of ``context`` and ``question``."""
    tokens = tuple(context.split())
    offsets, at = [], 0
    for token in tokens:
        at = context.index(token, at)
        offsets.append((at, at + len(token)))
        at += len(token)
    start, end = offsets[span[0]][0], offsets[span[1]][1]
    answer = Answer(context[start:end], start)
    q = tuple(question.split())
    return SquadExample(qid, "T", context, question, tokens, tuple(offsets), q, (answer,), span)


PAPER_TRAIN = TASK.configure("paper", []).train


def recipe(train: object = PAPER_TRAIN) -> SimpleNamespace:
    one = "The  cat sat on the mat ."  # two spaces: the written text is the joined tokens
    two = "Dogs bark loudly at night ."
    examples = [
        example("a", one, "Who sat ?", (0, 1)),
        example("b", one, "Where ?", (4, 5)),
        example("c", two, "What do dogs do ?", (1, 1)),
    ]
    dev = [example("d", two, "When ?", (3, 4))]
    splits = {"train": examples, "dev": dev}
    config = SimpleNamespace(train=train)
    return SimpleNamespace(splits=splits, context=lambda ex: ex.context_tokens, config=config)


def test_the_task_declares_its_peer() -> None:
    assert TASK.peer is PEER and PEER.model == "dialog_qa"
    assert "02480d86450dff1dfc2003f4ebd93d0347532a20" in PEER.source
    assert PEER.output_keys == ("qid", "best_span") and PEER.metric_key == "f1"
    assert "peer_qa" in PEER.packages and "allennlp_models.rc" not in PEER.packages


def test_written_data_keep_every_question_token_and_span_by_paragraph(tmp_path: Path) -> None:
    r = recipe()
    files = write_data(r, tmp_path)
    train = json.loads(files["train"].read_text(encoding="utf-8"))["data"][0]["paragraphs"]
    assert [[qa["id"] for qa in p["qas"]] for p in train] == [["a", "b"], ["c"]]
    assert train[0]["context"] == "The cat sat on the mat ."
    for paragraph, group in zip(train, (r.splits["train"][:2], r.splits["train"][2:]), strict=True):
        for qa, ex in zip(paragraph["qas"], group, strict=True):
            (answer,) = qa["answers"]
            tokens = paragraph["context"].split()
            start = len(paragraph["context"][: answer["answer_start"]].split())
            assert tokens[start : start + len(answer["text"].split())] == list(
                ex.context_tokens[ex.span[0] : ex.span[1] + 1]
            )
            assert qa["question"].split() == list(ex.question_tokens)
            assert (qa["yesno"], qa["followup"]) == ("x", "n")


def test_config_has_the_papers_widths_training_and_span_limit(tmp_path: Path) -> None:
    r = recipe()
    files = write_data(r, tmp_path)
    inputs = PeerInputs(tmp_path / "glove.txt", tmp_path / "o.json", tmp_path / "w.hdf5", 256)
    baseline = config(files, inputs, PeerRun(2, 3, 0, False), r)
    elmo = config(files, inputs, PeerRun(2, 3, 0, True), r)
    model = baseline["model"]
    assert model["type"] == "dialog_qa_spans" and model["num_context_answers"] == 0
    assert model["max_span_length"] == MAX_ANSWER_TOKENS - 1  # dialog_qa allows end - start ≤ it
    assert model["phrase_layer"]["input_size"] == 50 + 100
    assert elmo["model"]["phrase_layer"]["input_size"] == 50 + 100 + 256
    assert model["span_end_encoder"]["input_size"] == 4 * model["phrase_layer"]["hidden_size"]
    assert baseline["trainer"]["optimizer"]["type"] == "adadelta"
    assert baseline["trainer"]["moving_average"]["decay"] == 0.999
    assert baseline["data_loader"]["batch_sampler"]["batch_size"] == 2  # 3 questions ÷ 1.5
    assert baseline["dataset_reader"]["tokenizer"]["type"] == "peer_whitespace_offsets"
    assert "elmo" not in baseline["dataset_reader"]["token_indexers"]
    assert not baseline["model"]["text_field_embedder"]["token_embedders"]["tokens"]["trainable"]


def test_the_peers_token_spans_become_the_recipes_answer_texts() -> None:
    r = recipe()
    outputs = [
        {"qid": ["a", "b"], "best_span": [[0, 1], [5, 5]]},
        {"qid": ["c"], "best_span": [[1, 2]]},
    ]
    got = predictions(outputs, r.splits["train"])
    assert got == {"a": "The  cat", "b": "mat", "c": "bark loudly"}  # from the original text
    with pytest.raises(ValueError, match="answered 1 paragraphs, the split has 2"):
        predictions(outputs[:1], r.splits["train"])
    with pytest.raises(ValueError, match="outside"):
        predictions([{"qid": ["d"], "best_span": [[0, 9]]}], r.splits["dev"])
