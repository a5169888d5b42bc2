"""The NER tagger's peer: allennlp-models' ``crf_tagger`` (``nox -s peer -- --task ner``).

The configuration follows allenai/allennlp-models at tag v2.10.1 (commit
02480d86450dff1dfc2003f4ebd93d0347532a20), ``training_config/tagging/ner.jsonnet`` (the
baseline) and ``ner_elmo.jsonnet`` (ELMo at the input), the configurations whose baseline and
ELMo model matched the paper (89.91 ± 0.35 and 92.51 against 90.15 and 92.22); every change is in
:data:`CHANGES`. The data are the recipe's own sentences, written in the ``conll2003`` reader's
four columns with the tags in IOB1 (the reader's input scheme; it converts them to BIOUL, as the
project does), so both sides see the same sentences and the same chunks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.common.peer import (
    GLOVE_DIM,
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
from tasks.common.spans import convert

#: allennlp-models' files this configuration follows.
SOURCE = f"{MODELS_RELEASE} training_config/tagging/ner.jsonnet and ner_elmo.jsonnet"

#: Every change from :data:`SOURCE`.
CHANGES = (
    "data: the project's own sentences of each split (after its reader's skips), written as "
    "conll2003 columns WORD -X- O TAG with IOB1 tags (the POS and chunk columns are unused); "
    "whitespace inside a word is written as _",
    "GloVe 6B 50-d from a local text file (the embedded package exported as text) instead of "
    "the download URL",
    "validation on the dev split; the test split (when the data has one) is given as "
    "test_data_path for vocabulary creation only, as in ner.jsonnet",
    "num_epochs and batch size from the request (original 75 and 64), patience = epochs (no "
    "early stopping), cuda_device -1, every epoch's checkpoint kept (scored afterwards)",
    "batches of shuffled instances (allennlp 0.x's basic iterator, with which the configuration "
    "was published; the literal 2.10.1 data_loader does not shuffle)",
    "random_seed, numpy_seed and pytorch_seed all set to the run's seed",
    "ELMo (ner_elmo.jsonnet): the biLM's options and weights from local files (the shipped "
    "small biLM exported in the official layout), so the encoder input is 50 + 128 + its width",
    TIMING_CHANGE,
)

#: Filters of ner.jsonnet's character CNN (width 3): its share of the encoder input.
CHAR_FILTERS = 128

#: Placeholders of the unused POS and chunk columns (the reader converts the chunk column too,
#: so it must be a valid IOB1 sequence).
UNUSED_POS, UNUSED_CHUNK = "-X-", "O"


def write_data(recipe: Any, folder: Path) -> dict[str, Path]:
    """The recipe's splits as conll2003 files: ``folder/<split>.conll``.

    Raises:
        ValueError: plain tags (no chunk scheme): the conll2003 reader converts IOB1 chunks.
    """
    if recipe.encoding is None:
        raise ValueError("the crf_tagger peer reads chunk tags (IOB1/IOB2/BIOUL), not plain tags")
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for split, sentences in recipe.splits.items():
        lines: list[str] = []
        for sentence in sentences:
            tags = convert(sentence.tags, recipe.encoding, "IOB1")
            for word, tag in zip(sentence.tokens, tags, strict=True):
                lines.append(f"{'_'.join(word.split())} {UNUSED_POS} {UNUSED_CHUNK} {tag}")
            lines.append("")
        path = folder / f"{split}.conll"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[split] = path
    return files


def config(
    files: Mapping[str, Path], inputs: PeerInputs, run: PeerRun, recipe: Any
) -> dict[str, Any]:
    """allennlp's configuration of one run (:data:`SOURCE` with :data:`CHANGES`)."""
    indexers: dict[str, Any] = {
        "tokens": {"type": "single_id", "lowercase_tokens": True},
        "token_characters": {"type": "characters", "min_padding_length": 3},
    }
    embedders: dict[str, Any] = {
        "tokens": glove_embedder(inputs, trainable=True),
        "token_characters": {
            "type": "character_encoding",
            "embedding": {"embedding_dim": 16},
            "encoder": {
                "type": "cnn",
                "embedding_dim": 16,
                "num_filters": CHAR_FILTERS,
                "ngram_filter_sizes": [3],
                "conv_layer_activation": "relu",
            },
        },
    }
    model: dict[str, Any] = {
        "type": "crf_tagger",
        "label_encoding": "BIOUL",
        "constrain_crf_decoding": True,
        "calculate_span_f1": True,
        "dropout": 0.5,
        "include_start_end_transitions": False,
        "text_field_embedder": {"token_embedders": embedders},
        "encoder": {
            "type": "lstm",
            "input_size": GLOVE_DIM + CHAR_FILTERS + (inputs.elmo_dim if run.elmo else 0),
            "hidden_size": 200,
            "num_layers": 2,
            "dropout": 0.5,
            "bidirectional": True,
        },
    }
    if run.elmo:
        indexers["elmo"] = {"type": "elmo_characters"}
        embedders["elmo"] = {"type": "elmo_token_embedder", **elmo_embedder(inputs)}
        model["regularizer"] = {"regexes": [["scalar_parameters", {"type": "l2", "alpha": 0.1}]]}
    out: dict[str, Any] = {
        "dataset_reader": {
            "type": "conll2003",
            "tag_label": "ner",
            "convert_to_coding_scheme": "BIOUL",
            "token_indexers": indexers,
        },
        "model": model,
        "data_loader": {"batch_size": run.batch_size, "shuffle": True},
        "trainer": {
            "optimizer": {"type": "adam", "lr": 0.001},
            "validation_metric": "+f1-measure-overall",
            "grad_norm": 5.0,
        },
    }
    return as_requested(out, files, run)


def predictions(outputs: Sequence[Mapping[str, Any]], examples: Sequence[Any]) -> list[list[str]]:
    """The peer's decoded BIOUL tags, one list per sentence (the recipe's ``predict`` format).

    Raises:
        ValueError: another number of sentences, or of tags in a sentence, than ``examples``.
    """
    check_count(outputs, examples, "tagged", "sentences")
    out = []
    for i, (output, example) in enumerate(zip(outputs, examples, strict=True)):
        tags = list(output["tags"])
        if len(tags) != len(example.tokens):
            raise ValueError(
                f"sentence {i + 1} ({example.path}:{example.line}): the peer gave {len(tags)} "
                f"tags for {len(example.tokens)} words"
            )
        out.append(tags)
    return out


PEER = peer_adapter(
    __name__,
    model="crf_tagger",
    packages=("allennlp_models.tagging",),
    output_keys=("tags",),
    metric_key="f1-measure-overall",
)
