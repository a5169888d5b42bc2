"""SQuAD's peer: allennlp-models' ``dialog_qa`` (``nox -s peer -- --task squad``).

``DialogQA`` (allennlp-models ``allennlp_models/rc/models/dialog_qa.py``) is "a modified version
of BiDAF (with self attention and residual layer, from Clark and Gardner)": the BiDAF++ of
document-qa that the paper used for SQuAD, built for QuAC's dialogues. With
``num_context_answers`` 0 it reads one paragraph with all its questions, each answered on its own,
as single-turn SQuAD. What it shares with document-qa (``docqa/elmo/ablate_elmo_model.py`` and
``lm_qa_models.py``) and with the project's model (``tasks/squad/model.py``): a character CNN (20-d,
100 filters of width 5, max-pooled), one bidirectional GRU phrase layer for paragraph and question,
trilinear bi-attention merged as ``[c; a; c∘a; c∘q2c]`` → linear + ReLU, a residual block (GRU,
trilinear self-attention with its diagonal masked, ``[att; res; res∘att]`` → linear + ReLU, added
back), a start GRU and an end GRU reading ``[merged; start]``, variational dropout 0.2.

The configuration follows allenai/allennlp-models at tag v2.10.1 (commit
02480d86450dff1dfc2003f4ebd93d0347532a20), ``training_config/rc/dialog_qa.jsonnet``; every change
is in :data:`CHANGES`. The data are the recipe's own questions, grouped by paragraph in their
order, written as QuAC-shaped SQuAD JSON whose paragraphs and questions are the tokens the
project's model reads joined by single spaces (read back by a whitespace tokenizer with offsets,
``experiments/peer/allennlp_side/peer_qa.py``), so both sides read the same tokens; answers are
the project's gold token spans. The peer's decoded spans come back as token indices and the
recipe turns them into answer text as it does its own (``SquadExample.span_text``), so the
official-parity scorer sees both sides' answers the same way.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.common.peer import (
    GLOVE_DIM,
    GLOVE_ONLY,
    MODELS_RELEASE,
    TIMING_CHANGE,
    PeerInputs,
    PeerRun,
    as_requested,
    check_count,
    elmo_embedder,
    glove_embedder,
    peer_adapter,
)
from tasks.squad.model import ALLENNLP_CHAR_ROWS

#: allennlp-models' file this configuration follows.
SOURCE = (
    f"{MODELS_RELEASE} "
    "training_config/rc/dialog_qa.jsonnet and allennlp_models/rc/models/dialog_qa.py"
)

#: The paper's GRU width (A.4; document-qa: 90 units a direction); dialog_qa.jsonnet has 100.
HIDDEN = 90
#: dialog_qa's character CNN (as document-qa's): 20-d characters, 100 filters of width 5.
CHAR_DIM, CHAR_FILTERS, CHAR_WIDTH = 20, 100, 5
#: The longest answer both sides decode, in tokens (paper A.4: 17). ``dialog_qa`` skips a span
#: when ``end - start > max_span_length``, so 17 tokens is ``max_span_length`` 16.
MAX_ANSWER_TOKENS = 17
#: The labels of dialog_qa's yes/no and follow-up heads for every question (SQuAD has neither):
#: "x" (not a yes/no question) and "n" (no follow-up). Their losses are always added.
YESNO, FOLLOWUP = "x", "n"

#: Every change from :data:`SOURCE`.
CHANGES = (
    "data: the project's own questions of each split (after its policy's skips), grouped by "
    "paragraph in their order, as QuAC-shaped SQuAD JSON: context and questions are the tokens "
    "the project's model reads joined by single spaces, answers the project's gold token spans "
    "(text and start in the joined context), every question yesno 'x' and followup 'n'; read "
    "with a whitespace tokenizer that keeps offsets (peer_qa.py) instead of spaCy's "
    "en_core_web_sm; train_5000.json / val.json of QuAC replaced",
    "model dialog_qa_spans (peer_qa.py): dialog_qa unchanged that also outputs each question's "
    "decoded token span, so the project turns it into text from the original paragraph as it "
    "does its own",
    "num_context_answers 0 in reader and model (original 2): one paragraph with all its "
    "questions as one instance, each question answered on its own, as single-turn SQuAD",
    "yes/no and follow-up heads kept (their losses are always added), with constant labels",
    "GloVe 6B 50-d (uncased), frozen, from a local text file added as the 'tokens' embedder "
    "(the original has no word vectors; the paper's model reads fixed GloVe 840B); the phrase "
    "layer's input width follows",
    "ELMo (the ELMo rows): the biLM's options and weights from local files (the shipped small "
    "biLM exported in the official layout) instead of the published 5.5B biLM, dropout 0.2 and "
    "no layer norm as the original, at the phrase layer's input only (the original's and "
    "allennlp's only site; the project's paper preset also adds it at the output: see the "
    "'elmo.sites=input' row)",
    "GRU width 90 a direction (paper A.4, document-qa) instead of 100; max_span_length 16 "
    "(answers of at most 17 tokens, paper A.4) instead of 30",
    "optimizer, averaging and clipping as the project's run (paper preset: adadelta lr 1.0, "
    "rho 0.95, eps 1e-8, and a moving average of the weights with a constant decay of 0.999 "
    "for evaluation, no clipping, as document-qa and the paper, A.4) instead of SGD lr 0.01 "
    "momentum 0.9 with reduce_on_plateau; allennlp's moving average warms its decay up "
    "((1 + t) / (10 + t)) unless numerator = denominator, set to 1 here for a constant decay",
    "batches of the request's questions as whole paragraphs: round(batch / questions per "
    "training paragraph) paragraphs (the original: 10 QuAC dialogues; document-qa 45 questions)",
    "validation on the dev split; num_epochs from the request (original 30), patience = epochs "
    "(original 10: no early stopping), cuda_device -1, every epoch's checkpoint kept "
    "(scored afterwards)",
    "random_seed, numpy_seed and pytorch_seed all set to the run's seed",
    TIMING_CHANGE,
)


def _paragraphs(examples: Sequence[Any]) -> list[list[Any]]:
    """The examples grouped by paragraph (title and text), in order of first appearance."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for example in examples:
        groups.setdefault((example.title, example.context), []).append(example)
    return list(groups.values())


def _joined(tokens: Sequence[str]) -> tuple[str, list[int]]:
    """Tokens joined by single spaces, and each token's character start in the text."""
    starts, at = [], 0
    for token in tokens:
        starts.append(at)
        at += len(token) + 1
    return " ".join(tokens), starts


def _answer(tokens: Sequence[str], starts: Sequence[int], span: tuple[int, int]) -> dict[str, Any]:
    """The gold span as a SQuAD answer: its joined text and its character start."""
    start, end = span
    return {"text": " ".join(tokens[start : end + 1]), "answer_start": starts[start]}


def write_data(recipe: Any, folder: Path) -> dict[str, Path]:
    """The recipe's splits as QuAC-shaped SQuAD JSON: ``folder/<split>.json``.

    Raises:
        ValueError: a token holding whitespace (it would split otherwise), or a question without
            a gold span in its (cut) paragraph.
    """
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for split, examples in recipe.splits.items():
        paragraphs = []
        for group in _paragraphs(examples):
            context = tuple(recipe.context(group[0]))
            text, starts = _joined(context)
            qas = []
            for example in group:
                tokens = [*context, *example.question_tokens]
                bad = [t for t in tokens if len(t.split()) != 1]
                if bad:
                    raise ValueError(f"{split} question {example.qid!r}: token {bad[0]!r}")
                if example.span is None or example.span[1] >= len(context):
                    raise ValueError(
                        f"{split} question {example.qid!r}: no gold span in its paragraph"
                    )
                qas.append(
                    {
                        "id": example.qid,
                        "question": " ".join(example.question_tokens),
                        "answers": [_answer(context, starts, example.span)],
                        "yesno": YESNO,
                        "followup": FOLLOWUP,
                    }
                )
            paragraphs.append({"context": text, "qas": qas})
        document = {"version": "quac-shaped squad", "data": [{"paragraphs": paragraphs}]}
        path = folder / f"{split}.json"
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        files[split] = path
    return files


def paragraphs_per_batch(recipe: Any, questions: int) -> int:
    """The paragraphs of a peer batch holding about ``questions`` questions (at least one)."""
    sizes = [len(group) for group in _paragraphs(recipe.splits["train"])]
    return max(1, round(questions / statistics.mean(sizes)))


def _gru(input_size: int) -> dict[str, Any]:
    return {
        "type": "gru",
        "bidirectional": True,
        "hidden_size": HIDDEN,
        "input_size": input_size,
        "num_layers": 1,
    }


def config(
    files: Mapping[str, Path], inputs: PeerInputs, run: PeerRun, recipe: Any
) -> dict[str, Any]:
    """allennlp's configuration of one run (:data:`SOURCE` with :data:`CHANGES`)."""
    indexers: dict[str, Any] = {
        "tokens": {"type": "single_id", "lowercase_tokens": True},
        "token_characters": {
            "type": "characters",
            "character_tokenizer": {
                "byte_encoding": "utf-8",
                "end_tokens": [260],
                "start_tokens": [259],
            },
            "min_padding_length": CHAR_WIDTH,
        },
    }
    embedders: dict[str, Any] = {
        "tokens": glove_embedder(inputs, trainable=False),
        "token_characters": {
            "type": "character_encoding",
            "dropout": 0.2,
            "embedding": {"embedding_dim": CHAR_DIM, "num_embeddings": ALLENNLP_CHAR_ROWS},
            "encoder": {
                "type": "cnn",
                "embedding_dim": CHAR_DIM,
                "ngram_filter_sizes": [CHAR_WIDTH],
                "num_filters": CHAR_FILTERS,
            },
        },
    }
    embedded = GLOVE_DIM + CHAR_FILTERS
    if run.elmo:
        indexers["elmo"] = {"type": "elmo_characters"}
        # dialog_qa.jsonnet's ELMo keeps a dropout of 0.2 on the mixed vectors
        embedders["elmo"] = {"type": "elmo_token_embedder", **elmo_embedder(inputs), "dropout": 0.2}
        embedded += inputs.elmo_dim
    encoded = 2 * HIDDEN
    model = {
        "type": "dialog_qa_spans",
        "dropout": 0.2,
        "marker_embedding_dim": 10,
        "num_context_answers": 0,
        "max_span_length": MAX_ANSWER_TOKENS - 1,
        "phrase_layer": _gru(embedded),
        "residual_encoder": _gru(encoded),
        "span_start_encoder": _gru(encoded),
        "span_end_encoder": _gru(2 * encoded),
        "text_field_embedder": {"token_embedders": embedders},
    }
    out: dict[str, Any] = {
        "dataset_reader": {
            "type": "quac",
            "num_context_answers": 0,
            "tokenizer": {"type": "peer_whitespace_offsets"},
            "token_indexers": indexers,
        },
        "model": model,
        "data_loader": {
            "batch_sampler": {
                "type": "bucket",
                "batch_size": paragraphs_per_batch(recipe, run.batch_size),
            }
        },
        "trainer": {**trainer(recipe.config.train), "validation_metric": "+f1"},
    }
    return as_requested(out, files, run)


def trainer(train: Any) -> dict[str, Any]:
    """allennlp's optimizer, moving average and gradient clipping for the project's
    :class:`~tasks.core.TrainConfig` (the paper preset's: document-qa's Adadelta and average).

    Raises:
        ValueError: an optimizer without an allennlp counterpart here.
    """
    opt = train.optimizer
    if opt.name == "adadelta":
        optimizer = {"type": "adadelta", "lr": opt.lr, "rho": opt.rho, "eps": opt.eps}
    elif opt.name == "adam":
        optimizer = {"type": "adam", "lr": opt.lr, "betas": list(opt.betas), "eps": opt.eps}
    else:
        raise ValueError(f"SQuAD's peer takes adadelta or adam, not {opt.name!r}")
    if opt.weight_decay:
        optimizer["weight_decay"] = opt.weight_decay
    out: dict[str, Any] = {"optimizer": optimizer}
    if train.ema:  # a constant decay, as the project's (numerator = denominator)
        out["moving_average"] = {
            "type": "exponential",
            "decay": train.ema,
            "numerator": 1.0,
            "denominator": 1.0,
        }
    if train.clip_norm is not None:
        out["grad_norm"] = train.clip_norm
    return out


def predictions(outputs: Sequence[Mapping[str, Any]], examples: Sequence[Any]) -> dict[str, str]:
    """The peer's answers, ``{question id: answer text}`` (the recipe's ``predict`` format):
    each decoded token span turned into text from the original paragraph.

    Raises:
        ValueError: another number of paragraphs than the split has, a question the split does
            not have or one answered twice, or a span outside its paragraph.
    """
    check_count(outputs, _paragraphs(examples), "answered", "paragraphs")
    by_id = {example.qid: example for example in examples}
    out: dict[str, str] = {}
    for output in outputs:
        for qid, (start, end) in zip(output["qid"], output["best_span"], strict=True):
            example = by_id.get(qid)
            if example is None or qid in out:
                raise ValueError(f"the peer answered question {qid!r} the split does not hold")
            if not 0 <= start <= end < len(example.context_tokens):
                raise ValueError(f"question {qid!r}: the peer's span {start}-{end} is outside")
            out[qid] = example.span_text(start, end)
    missing = len(examples) - len(out)
    if missing:
        raise ValueError(f"the peer left {missing} questions unanswered")
    return out


PEER = peer_adapter(
    __name__,
    model="dialog_qa",
    # the two modules, not allennlp_models.rc: --include-package imports every submodule, and
    # rc.tools.narrativeqa needs rouge, which nothing here uses
    packages=("allennlp_models.rc.dataset_readers.quac", "peer_qa"),
    output_keys=("qid", "best_span"),
    metric_key="f1",
    overrides=GLOVE_ONLY,  # the paper preset reads GloVe 840B
    native_scale=0.01,  # DialogQA's official F1 is in percent (100 × the QuAC F1)
)
