"""The SRL tagger's peer: allennlp-models' ``srl`` (``nox -s peer -- --task srl``).

The configuration follows allenai/allennlp-models at tag v2.10.1 (commit
02480d86450dff1dfc2003f4ebd93d0347532a20), ``training_config/structured_prediction/srl.jsonnet``
(the baseline: He et al. 2017's 8-layer alternating highway biLSTM) and ``srl_elmo.jsonnet``
(ELMo at the input), the configurations behind the paper's SRL rows (81.4 → 84.6 test F1 on
CoNLL-2012); every change is in :data:`CHANGES`.

The data are the recipe's own predicate instances, in its order: one CoNLL-2012 ``gold_conll``
file per split, in a folder of its own (the ``srl`` reader walks a folder for files ending in
``gold_conll``; one file keeps the order, which ``os.walk`` would not). Each sentence that gives
instances is written once with one predicate column per instance, holding the instance's IOB2
tags as brackets, so the reader yields exactly one instance per project instance, in the same
order, with the same tags; sentences that give none (no predicate, or a training sentence over
``max_length``) are not written, so the reader's predicate-less all-``O`` instances never arise.
"""

from __future__ import annotations

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
from tasks.common.spans import spans_to_brackets, tags_to_spans

#: allennlp-models' files this configuration follows.
SOURCE = f"{MODELS_RELEASE} training_config/structured_prediction/srl.jsonnet and srl_elmo.jsonnet"

#: Every change from :data:`SOURCE`.
CHANGES = (
    "data: the project's own predicate instances of train and dev (after its reader's skips: "
    "sentences without predicates, predicate columns without a V span, nested arguments), in "
    "its order, as one CoNLL-2012 file <split>/<split>.gold_conll per split; each sentence with "
    "instances is written once with one predicate column per instance (its IOB2 tags as "
    "brackets), sentences without instances are left out (so the reader makes no all-O "
    "predicate-less instance); the columns the srl reader does not read are placeholders (POS "
    "XX, so no parse tree is built; parse *, lemma, frameset, sense and speaker -, NE *, "
    "coreference -); whitespace inside a word is written as _",
    "no test file: the project's SRL vocabulary indexes train and dev only, as srl.jsonnet "
    "(no test_data_path)",
    "words lowercased (a single_id indexer with lowercase_tokens true) as the project's paper "
    "preset reads them; the file's default indexer keeps case, so against the uncased GloVe 6B "
    "every capitalised word would start from a random vector",
    "GloVe 6B 50-d from a local text file (the embedded package exported as text) instead of 6B "
    "100-d from the download URL, still trainable; the encoder's input width follows: 50 + 100 "
    "instead of 200",
    "validation on the dev split in sequential batches of the request's size (the original "
    "validates with the training bucket sampler)",
    "num_epochs and batch size from the request (original 500 and 80), patience = epochs "
    "(original 20, 200 with ELMo: no early stopping), cuda_device -1, every epoch's checkpoint "
    "kept (original: allennlp's default 2, 10 with ELMo; scored afterwards)",
    "random_seed, numpy_seed and pytorch_seed all set to the run's seed",
    "ELMo (srl_elmo.jsonnet): the biLM's options and weights from local files (the shipped "
    "small biLM exported in the official layout) instead of the 2x4096_512 biLM from the "
    "download URL, so the encoder input is its width + 100 instead of 1124",
    "not changed, but unlike the project: srl_elmo.jsonnet reads ELMo alone (GloVe dropped), "
    "the project's paper preset keeps GloVe beside ELMo at the input ([x_k; ELMo_k]); the srl "
    "reader's verb indicator marks every token whose tag ends in -V (the whole V span and any "
    "C-V piece), the project's only the predicate's first token",
    TIMING_CHANGE,
)

#: The predicate indicator's embedding (``binary_feature_dim``, both files).
BINARY_FEATURE_DIM = 100
#: Units of each LSTM layer and number of layers (``alternating_lstm``, both files).
HIDDEN, LAYERS = 300, 8
#: Recurrent dropout of each layer (both files).
RECURRENT_DROPOUT = 0.1
#: Dropout on the ELMo vectors (srl_elmo.jsonnet; the project's ``TASK.elmo_dropout``).
ELMO_DROPOUT = 0.1
#: L2 on the ELMo scalar-mix weights (srl_elmo.jsonnet; the project's mix λ).
MIX_L2 = 0.001
#: The splits written: the project's SRL vocabulary indexes train and dev only.
SPLITS = ("train", "dev")
#: Placeholders of the columns the srl reader does not read: POS ``XX`` makes allennlp's
#: Ontonotes reader skip the parse tree (an ``XX`` token has no parse piece), whatever the parse
#: column holds; then parse bit, lemma, frameset, sense, speaker, named entities, coreference.
POS, PARSE, LEMMA, FRAMESET, SENSE, SPEAKER, ENTITIES, COREF = (
    "XX",
    "*",
    "-",
    "-",
    "-",
    "-",
    "*",
    "-",
)


def written_word(word: str) -> str:
    """``word`` as written in a column (whitespace would split the columns)."""
    return "_".join(word.split())


def verb_position(tags: Sequence[str]) -> int | None:
    """The token allennlp's ``srl`` reader names as the verb: the first whose tag ends in ``-V``
    (its verb indicator marks them all)."""
    return next((i for i, tag in enumerate(tags) if tag[-2:] == "-V"), None)


def _where(example: Any) -> str:
    return (
        f"{example.split} sentence {example.instance.sentence_id}, predicate at token "
        f"{example.instance.predicate_index}"
    )


def _runs(examples: Sequence[Any]) -> list[list[Any]]:
    """The examples in consecutive runs of one sentence (each run is written as one sentence)."""
    runs: list[list[Any]] = []
    for example in examples:
        if runs and runs[-1][0].instance.sentence_id == example.instance.sentence_id:
            runs[-1].append(example)
        else:
            runs.append([example])
    return runs


def _sentence_lines(sentence: Any, examples: Sequence[Any]) -> list[str]:
    """The token lines of one sentence with one predicate column per example.

    Raises:
        ValueError: an example without ``B-V`` at its predicate (the reader finds the predicate
            by its ``V`` tag), two examples with the same predicate (the reader pairs predicate
            words with columns, and the predictions are keyed by predicate), or a length that is
            not the sentence's.
    """
    tokens = examples[0].tokens
    columns: list[list[str]] = []
    seen: set[int] = set()
    for example in examples:
        instance = example.instance
        if len(instance.tags) != len(tokens) or tuple(example.tokens) != tuple(tokens):
            raise ValueError(f"{_where(example)}: tokens or tags differ from its sentence's")
        if instance.tags[instance.predicate_index] != "B-V":
            raise ValueError(
                f"{_where(example)}: tag {instance.tags[instance.predicate_index]!r} at the "
                "predicate; the srl reader finds the predicate by its V tag"
            )
        if instance.predicate_index in seen:
            raise ValueError(f"{_where(example)}: a second instance of the same predicate")
        seen.add(instance.predicate_index)
        columns.append(spans_to_brackets(len(tokens), tags_to_spans(instance.tags, "IOB2")))
    document = "_".join(str(sentence.document_id).split()) or "-"
    lines = []
    for i, word in enumerate(tokens):
        cells = [document, str(sentence.part), str(i), written_word(word), POS, PARSE]
        cells += [LEMMA, FRAMESET, SENSE, SPEAKER, ENTITIES]
        cells += [column[i] for column in columns]
        cells.append(COREF)
        lines.append(" ".join(cells))
    return lines


def write_data(recipe: Any, folder: Path) -> dict[str, Path]:
    """The recipe's train and dev instances as CoNLL-2012 files: ``folder/<split>/<split>.
    gold_conll``; returns split → its folder (what the ``srl`` reader is given).

    Consecutive instances of one sentence share one written sentence (one predicate column
    each); a document part's written sentences are one ``#begin document`` block.

    Raises:
        ValueError: an instance the reader would read differently (see :func:`_sentence_lines`).
    """
    files: dict[str, Path] = {}
    for split in SPLITS:
        examples = recipe.splits.get(split)
        if examples is None:
            continue
        sentences = recipe.sentences[split]
        lines: list[str] = []
        current: tuple[str, int] | None = None
        for run in _runs(examples):
            sentence = sentences[run[0].instance.sentence_id]
            key = (str(sentence.document_id), int(sentence.part))
            if key != current:
                if current is not None:
                    lines.append("#end document")
                lines.append(f"#begin document ({key[0]}); part {key[1]:03d}")
                current = key
            lines += [*_sentence_lines(sentence, run), ""]
        if current is not None:
            lines.append("#end document")
        split_folder = folder / split
        split_folder.mkdir(parents=True, exist_ok=True)
        (split_folder / f"{split}.gold_conll").write_text("\n".join(lines) + "\n", "utf-8")
        files[split] = split_folder
    return files


def config(
    files: Mapping[str, Path], inputs: PeerInputs, run: PeerRun, recipe: Any
) -> dict[str, Any]:
    """allennlp's configuration of one run (:data:`SOURCE` with :data:`CHANGES`)."""
    indexers: dict[str, Any]
    embedders: dict[str, Any]
    encoder: dict[str, Any] = {
        "type": "alternating_lstm",
        "hidden_size": HIDDEN,
        "num_layers": LAYERS,
        "recurrent_dropout_probability": RECURRENT_DROPOUT,
    }
    if run.elmo:  # srl_elmo.jsonnet: ELMo alone, no bias on the highway's input projection
        indexers = {"elmo": {"type": "elmo_characters"}}
        elmo = {**elmo_embedder(inputs), "dropout": ELMO_DROPOUT}
        embedders = {"elmo": {"type": "elmo_token_embedder", **elmo}}
        encoder.update(input_size=inputs.elmo_dim + BINARY_FEATURE_DIM)
        encoder["use_input_projection_bias"] = False
    else:
        indexers = {"tokens": {"type": "single_id", "lowercase_tokens": True}}
        embedders = {"tokens": glove_embedder(inputs, trainable=True)}
        encoder.update(input_size=GLOVE_DIM + BINARY_FEATURE_DIM, use_highway=True)
    model: dict[str, Any] = {
        "type": "srl",
        "text_field_embedder": {"token_embedders": embedders},
        "initializer": {"regexes": [["tag_projection_layer.*weight", {"type": "orthogonal"}]]},
        "encoder": encoder,
        "binary_feature_dim": BINARY_FEATURE_DIM,
    }
    if run.elmo:
        model["regularizer"] = {
            "regexes": [[".*scalar_parameters.*", {"type": "l2", "alpha": MIX_L2}]]
        }
    out: dict[str, Any] = {
        "dataset_reader": {"type": "srl", "token_indexers": indexers},
        "model": model,
        "data_loader": {"batch_sampler": {"type": "bucket", "batch_size": run.batch_size}},
        "trainer": {
            "grad_clipping": 1.0,
            "validation_metric": "+f1-measure-overall",
            "optimizer": {"type": "adadelta", "rho": 0.95},
        },
    }
    return as_requested(out, files, run)


def predictions(
    outputs: Sequence[Mapping[str, Any]], examples: Sequence[Any]
) -> dict[tuple[int, int], tuple[str, ...]]:
    """The peer's Viterbi tags, ``{(sentence_id, predicate_index): IOB2 tags}`` (the recipe's
    ``predict`` format), from one split's outputs in file order (= the examples' order).

    Raises:
        ValueError: another number of outputs than ``examples``, another number of tags than
            words, a verb (when the output names one) that is not the instance's, or a repeated
            instance.
    """
    check_count(outputs, examples, "tagged", "predicates")
    out: dict[tuple[int, int], tuple[str, ...]] = {}
    for i, (output, example) in enumerate(zip(outputs, examples, strict=True)):
        tags = tuple(output["tags"])
        if len(tags) != len(example.tokens):
            raise ValueError(
                f"instance {i + 1} ({_where(example)}): the peer gave {len(tags)} tags for "
                f"{len(example.tokens)} words"
            )
        if not all(isinstance(tag, str) for tag in tags):
            raise ValueError(f"instance {i + 1} ({_where(example)}): tags {tags!r}")
        if "verb" in output:
            position = verb_position(example.instance.tags)
            verb = None if position is None else written_word(example.tokens[position])
            if output["verb"] != verb:
                raise ValueError(
                    f"instance {i + 1} ({_where(example)}): the peer's verb {output['verb']!r} "
                    f"is not the instance's {verb!r} (outputs out of step with the examples)"
                )
        if example.key in out:
            raise ValueError(f"instance {i + 1} ({_where(example)}): repeated")
        out[example.key] = tags
    return out


PEER = peer_adapter(
    __name__,
    model="srl",
    packages=("allennlp_models.structured_prediction",),
    output_keys=("tags", "verb"),
    metric_key="f1-measure-overall",
    overrides=GLOVE_ONLY,  # the paper preset reads GloVe 6B 100-d
)
