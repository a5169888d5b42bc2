"""The SST-5 classifier's peer: allennlp-models' ``bcn`` (``nox -s peer -- --task sst5``).

The configuration follows allenai/allennlp-models at tag v2.10.1 (commit
02480d86450dff1dfc2003f4ebd93d0347532a20),
``training_config/classification/biattentive_classification_network.jsonnet`` (the baseline) and
``biattentive_classification_network_elmo.jsonnet`` (ELMo at the input only, M. Peters'
configuration of the paper's 54.7); every change is in :data:`CHANGES`.

The data are the recipe's own examples, in its order: for SST trees every training example the
project trains on (the sentences and its phrases of at least ``min_phrase_tokens`` tokens) is one
flat one-node tree ``(LABEL tok … tok)`` for the ``sst_tokens`` reader, read without subtrees, so
both sides see exactly the same training instances; other layouts (JSON lines, the Hub) are
``text_classification_json`` lines of the whitespace-joined tokens. Every label is written as the
recipe's label id (``"0"`` … ``"K-1"``; for SST trees these are the labels themselves), so the
peer's label strings map back to the project's ids by string, never by allennlp's
frequency-ordered index.
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
SOURCE = (
    f"{MODELS_RELEASE} "
    "training_config/classification/biattentive_classification_network.jsonnet and "
    "biattentive_classification_network_elmo.jsonnet"
)

#: Every change from :data:`SOURCE`.
CHANGES = (
    "data: the project's own examples of each split, in its order; SST trees as one flat "
    "one-node tree (LABEL tok ... tok) per example for sst_tokens, so the training file holds "
    "exactly the project's training instances (its sentences and its phrases of >= "
    "min_phrase_tokens tokens; the paper preset: >= 4) and both readers use use_subtrees false "
    "(the original trains on every subtree with use_subtrees true); JSON-lines and Hub data as "
    "text_classification_json lines of the whitespace-joined tokens with a whitespace tokenizer",
    "labels written as the recipe's label ids (0-4 for SST trees, as the files; 0..K-1 in the "
    "recipe's label order otherwise); the maxout's last width is the number of labels in "
    "the data (5 in the file)",
    "GloVe 6B 50-d (uncased) from a local text file (the embedded package exported as text) "
    "instead of 840B 300-d from the download URL, still frozen; the GloVe indexer lowercases "
    "(lowercase_tokens true) since these vectors are uncased, as the project's lookups; the "
    "pre-encode input width follows: 50 (+ the biLM's width with ELMo at the input) instead of "
    "300 (1324 with ELMo)",
    "validation on the dev split; the test split (when the data has one) is given as "
    "test_data_path for vocabulary creation only, as in the original",
    "num_epochs and batch size from the request (original 40 and 100), patience = epochs "
    "(original 5: no early stopping), cuda_device -1, every epoch's checkpoint kept (scored "
    "afterwards)",
    "random_seed, numpy_seed and pytorch_seed all set to the run's seed",
    "ELMo (biattentive_classification_network_elmo.jsonnet, at the input only, as the project's "
    "paper preset: TASK.sites_for('paper') = input): the biLM's options and weights from local "
    "files (the shipped small biLM exported in the official layout) instead of the published "
    "5.5B biLM; the ELMo indexer reads the tokens as written (cased)",
    TIMING_CHANGE,
)

#: The ReLU pre-encode layer's width; every biLSTM's units per direction (both files).
PRE_ENCODE_DIM = ENCODER_HIDDEN = INTEGRATOR_HIDDEN = 300
#: The maxout's hidden widths and the dropout after each of its layers (both files).
MAXOUT_DIMS, MAXOUT_DROPOUT, MAXOUT_POOL = (1200, 600), (0.2, 0.3, 0.0), 4
#: Where biattentive_classification_network_elmo.jsonnet concatenates ELMo.
ELMO_AT_INPUT, ELMO_AT_OUTPUT = True, False
#: The pooled vector: max, min, mean and self-attentive pooling of the integrator's output.
POOLINGS = 4


def _trees(recipe: Any) -> bool:
    return bool(recipe.layout == "trees")


def write_data(recipe: Any, folder: Path) -> dict[str, Path]:
    """The recipe's splits in the peer reader's format: ``folder/<split>.txt`` (flat SST trees)
    for tree data, else ``folder/<split>.jsonl`` (``{"text", "label"}`` lines).

    Raises:
        ValueError: a tree token holding whitespace or a bracket (it would not read back).
    """
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for split, examples in recipe.splits.items():
        lines: list[str] = []
        for example in examples:
            label = str(example.label)
            if _trees(recipe):
                bad = [t for t in example.tokens if "(" in t or ")" in t or len(t.split()) != 1]
                if bad:
                    raise ValueError(
                        f"{split} line {example.line}: token {bad[0]!r} cannot be written in "
                        "an SST tree"
                    )
                lines.append(f"({label} {' '.join(example.tokens)})")
            else:
                text = " ".join(example.tokens)
                lines.append(json.dumps({"text": text, "label": label}, ensure_ascii=False))
        path = folder / f"{split}{'.txt' if _trees(recipe) else '.jsonl'}"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[split] = path
    return files


def config(
    files: Mapping[str, Path], inputs: PeerInputs, run: PeerRun, recipe: Any
) -> dict[str, Any]:
    """allennlp's configuration of one run (:data:`SOURCE` with :data:`CHANGES`)."""
    indexers: dict[str, Any] = {"tokens": {"type": "single_id", "lowercase_tokens": True}}
    elmo_sites = (ELMO_AT_INPUT, ELMO_AT_OUTPUT) if run.elmo else (False, False)
    elmo_dim = inputs.elmo_dim if run.elmo else 0
    if run.elmo:
        indexers["elmo"] = {"type": "elmo_characters"}
    reader: dict[str, Any]
    if _trees(recipe):
        reader = {"type": "sst_tokens", "use_subtrees": False, "granularity": "5-class"}
    else:
        reader = {"type": "text_classification_json", "tokenizer": {"type": "whitespace"}}
    reader["token_indexers"] = indexers
    integrated = 2 * INTEGRATOR_HIDDEN + (elmo_dim if elmo_sites[1] else 0)
    model: dict[str, Any] = {
        "type": "bcn",
        "text_field_embedder": {
            "token_embedders": {"tokens": glove_embedder(inputs, trainable=False)}
        },
        "embedding_dropout": 0.5 if run.elmo else 0.25,
        "pre_encode_feedforward": {
            "input_dim": GLOVE_DIM + (elmo_dim if elmo_sites[0] else 0),
            "num_layers": 1,
            "hidden_dims": [PRE_ENCODE_DIM],
            "activations": ["relu"],
            "dropout": [0.25],
        },
        "encoder": {
            "type": "lstm",
            "input_size": PRE_ENCODE_DIM,
            "hidden_size": ENCODER_HIDDEN,
            "num_layers": 1,
            "bidirectional": True,
        },
        "integrator": {
            "type": "lstm",
            "input_size": 3 * 2 * ENCODER_HIDDEN,  # [x; x - x~; x * x~] of the biLSTM's output
            "hidden_size": INTEGRATOR_HIDDEN,
            "num_layers": 1,
            "bidirectional": True,
        },
        "integrator_dropout": 0.1,
        "output_layer": {
            "input_dim": POOLINGS * integrated,
            "num_layers": len(MAXOUT_DIMS) + 1,
            "output_dims": [*MAXOUT_DIMS, label_count(recipe)],
            "pool_sizes": MAXOUT_POOL,
            "dropout": list(MAXOUT_DROPOUT),
        },
    }
    if run.elmo:
        model["elmo"] = {**elmo_embedder(inputs), "num_output_representations": sum(elmo_sites)}
        model["use_input_elmo"], model["use_integrator_output_elmo"] = elmo_sites
    out: dict[str, Any] = {
        "dataset_reader": reader,
        "validation_dataset_reader": dict(reader),
        "model": model,
        # the original's bucket sampler (similar lengths together, padding_noise 0.1, batch
        # order shuffled), at the request's batch size
        "data_loader": {"batch_sampler": {"type": "bucket", "batch_size": run.batch_size}},
        "trainer": {
            "grad_norm": 5.0,
            "validation_metric": "+accuracy",
            "optimizer": {"type": "adam", "lr": 0.001},
        },
    }
    return as_requested(out, files, run)


def predictions(outputs: Sequence[Mapping[str, Any]], examples: Sequence[Any]) -> list[int]:
    """The peer's predicted label ids, one per text (the recipe's ``predict`` format): each
    label string is the recipe's label id that :func:`write_data` wrote.

    Raises:
        ValueError: another number of outputs than ``examples``, or a label that is not an id.
    """
    check_count(outputs, examples, "labelled", "texts")
    out = []
    for i, (output, example) in enumerate(zip(outputs, examples, strict=True)):
        label = str(output["label"])
        if not (label.isascii() and label.isdigit()):
            raise ValueError(
                f"text {i + 1} (line {example.line}): the peer's label {label!r} is not one of "
                "the label ids written"
            )
        out.append(int(label))
    return out


PEER = peer_adapter(
    __name__,
    model="bcn",
    packages=("allennlp_models.classification",),
    output_keys=("label",),
    metric_key="accuracy",
    overrides=GLOVE_ONLY,  # the paper preset reads GloVe 840B
)
