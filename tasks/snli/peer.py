"""The SNLI classifier's peer: allennlp-models' ``esim`` (``nox -s peer -- --task snli``).

The configuration follows allenai/allennlp-models at tag v2.10.1 (commit
02480d86450dff1dfc2003f4ebd93d0347532a20), ``training_config/pair_classification/esim.jsonnet``
(the baseline) and ``esim_elmo.jsonnet`` (ELMo instead of GloVe at the encoder's input: the
configuration whose model reached 88.5 test accuracy against the paper's 88.7); every change is in
:data:`CHANGES`. The data are the recipe's own pairs, in its order, written as SNLI JSON lines
whose ``sentence1`` / ``sentence2`` are the tokens the project's model reads (the binary parses'
PTB tokens, or its tokenizer's for plain files; cut at ``max_tokens`` as the project cuts dev/test
sides) joined by spaces and read back by a whitespace tokenizer, so both sides see the same pairs
and the same tokens; ``gold_label`` is the recipe's label string, which the peer's ``label``
output gives back.
"""

from __future__ import annotations

import json
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
    label_count,
    peer_adapter,
)

#: allennlp-models' files this configuration follows.
SOURCE = f"{MODELS_RELEASE} training_config/pair_classification/esim.jsonnet and esim_elmo.jsonnet"

#: Every change from :data:`SOURCE`.
CHANGES = (
    "data: the project's own pairs of each split (after its policy's skips), in its order, as "
    "snli JSON lines (pairID, gold_label, sentence1, sentence2) whose sentences are the tokens "
    "the project's model reads (cut at max_tokens as it cuts dev/test sides) joined by spaces, "
    "read with a whitespace tokenizer instead of the default spaCy one",
    "GloVe 6B 50-d (uncased) from a local text file (the embedded package exported as text) "
    "instead of 840B 300-d from the download URL, still trainable and lowercased; the encoder's "
    "input width follows: 50 instead of 300",
    "the output logit's width is the number of labels in the data (3 in the file)",
    "validation on the dev split; the test split (when the data has one) is given as "
    "test_data_path for vocabulary creation only (evaluate_on_test false), as the project "
    "indexes the test split's words (the original has no test_data_path)",
    "num_epochs and batch size from the request (original 75, and 64 / 32 with ELMo), patience "
    "= epochs (original 5: no early stopping), cuda_device -1, every epoch's checkpoint kept "
    "(original keep_most_recent_by_count 2; scored afterwards)",
    "random_seed, numpy_seed and pytorch_seed all set to the run's seed",
    "ELMo (esim_elmo.jsonnet): the biLM's options and weights from local files (the shipped "
    "small biLM exported in the official layout) instead of the published 5.5B biLM, so the "
    "encoder input is its width instead of 1024",
    "ELMo placement differs from the project's paper preset: esim_elmo.jsonnet puts ELMo at the "
    "encoder's input only and drops GloVe (its ELMo row reads ELMo alone), while the project "
    "(TASK.sites_for('paper') = input and output) concatenates ELMo with GloVe at the input and "
    "adds it at the encoder's output; allennlp's esim has no output site",
    TIMING_CHANGE,
)

#: Units per direction of both biLSTMs and width of both feed-forward layers (both files).
HIDDEN = 300
#: The enhancement [a; ã; a − ã; a ⊙ ã] and the pooled vector [avg_a; max_a; avg_b; max_b].
ENHANCED = POOLED = 4
#: The labels the ``snli`` reader accepts (it asserts on any other ``gold_label``).
SNLI_LABELS = ("entailment", "neutral", "contradiction")


def write_data(recipe: Any, folder: Path) -> dict[str, Path]:
    """The recipe's splits as snli JSON lines: ``folder/<split>.jsonl``.

    Raises:
        ValueError: a label outside :data:`SNLI_LABELS` (the ``snli`` reader asserts on it), or
            a token holding whitespace (it would split differently).
    """
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for split, examples in recipe.splits.items():
        lines: list[str] = []
        for example in examples:
            if example.label not in SNLI_LABELS:
                raise ValueError(
                    f"{split} pair {example.pair_id!r}: label {example.label!r}; the snli "
                    f"reader reads only {list(SNLI_LABELS)}"
                )
            sides = recipe.tokens(example)
            bad = [t for side in sides for t in side if len(t.split()) != 1]
            if bad:
                raise ValueError(f"{split} pair {example.pair_id!r}: token {bad[0]!r}")
            record = {
                "pairID": example.pair_id,
                "gold_label": example.label,
                "sentence1": " ".join(sides[0]),
                "sentence2": " ".join(sides[1]),
            }
            lines.append(json.dumps(record, ensure_ascii=False))
        path = folder / f"{split}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[split] = path
    return files


def config(
    files: Mapping[str, Path], inputs: PeerInputs, run: PeerRun, recipe: Any
) -> dict[str, Any]:
    """allennlp's configuration of one run (:data:`SOURCE` with :data:`CHANGES`)."""
    indexers: dict[str, Any]
    embedders: dict[str, Any]
    if run.elmo:  # esim_elmo.jsonnet: ELMo alone
        indexers = {"elmo": {"type": "elmo_characters"}}
        embedders = {"elmo": {"type": "elmo_token_embedder", **elmo_embedder(inputs)}}
        embedded = inputs.elmo_dim
    else:
        indexers = {"tokens": {"type": "single_id", "lowercase_tokens": True}}
        embedders = {"tokens": glove_embedder(inputs, trainable=True)}
        embedded = GLOVE_DIM
    model: dict[str, Any] = {
        "type": "esim",
        "dropout": 0.5,
        "text_field_embedder": {"token_embedders": embedders},
        "encoder": {
            "type": "lstm",
            "input_size": embedded,
            "hidden_size": HIDDEN,
            "num_layers": 1,
            "bidirectional": True,
        },
        "matrix_attention": {"type": "dot_product"},
        "projection_feedforward": {
            "input_dim": ENHANCED * 2 * HIDDEN,
            "hidden_dims": HIDDEN,
            "num_layers": 1,
            "activations": "relu",
        },
        "inference_encoder": {
            "type": "lstm",
            "input_size": HIDDEN,
            "hidden_size": HIDDEN,
            "num_layers": 1,
            "bidirectional": True,
        },
        "output_feedforward": {
            "input_dim": POOLED * 2 * HIDDEN,
            "num_layers": 1,
            "hidden_dims": HIDDEN,
            "activations": "relu",
            "dropout": 0.5,
        },
        "output_logit": {
            "input_dim": HIDDEN,
            "num_layers": 1,
            "hidden_dims": label_count(recipe),
            "activations": "linear",
        },
        "initializer": {
            "regexes": [
                [".*linear_layers.*weight", {"type": "xavier_uniform"}],
                [".*linear_layers.*bias", {"type": "zero"}],
                [".*weight_ih.*", {"type": "xavier_uniform"}],
                [".*weight_hh.*", {"type": "orthogonal"}],
                [".*bias_ih.*", {"type": "zero"}],
                [".*bias_hh.*", {"type": "lstm_hidden_bias"}],
            ]
        },
    }
    out: dict[str, Any] = {
        "dataset_reader": {
            "type": "snli",
            "tokenizer": {"type": "whitespace"},
            "token_indexers": indexers,
        },
        "model": model,
        # the original's bucket sampler (similar lengths together, padding_noise 0.1, batch
        # order shuffled), at the request's batch size
        "data_loader": {"batch_sampler": {"type": "bucket", "batch_size": run.batch_size}},
        "trainer": {
            "optimizer": {"type": "adam", "lr": 0.0004},
            "validation_metric": "+accuracy",
            "grad_norm": 10.0,
            "learning_rate_scheduler": {
                "type": "reduce_on_plateau",
                "factor": 0.5,
                "mode": "max",
                "patience": 0,
            },
        },
    }
    return as_requested(out, files, run)


def predictions(outputs: Sequence[Mapping[str, Any]], examples: Sequence[Any]) -> dict[str, str]:
    """The peer's predicted labels, ``{pair_id: label}`` (the recipe's ``predict`` format).

    Raises:
        ValueError: another number of outputs than ``examples``, or a label that is not a string.
    """
    check_count(outputs, examples, "labelled", "pairs")
    out: dict[str, str] = {}
    for output, example in zip(outputs, examples, strict=True):
        label = output["label"]
        if not isinstance(label, str):
            raise ValueError(f"pair {example.pair_id!r}: the peer's label {label!r} is no string")
        out[example.pair_id] = label
    return out


PEER = peer_adapter(
    __name__,
    model="esim",
    packages=("allennlp_models.pair_classification",),
    output_keys=("label",),
    metric_key="accuracy",
    overrides=GLOVE_ONLY,  # the paper preset reads GloVe 840B
)
