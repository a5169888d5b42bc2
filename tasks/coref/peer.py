"""The coreference model's peer: allennlp-models' ``coref`` (``nox -s peer -- --task coref``).

The configuration follows allenai/allennlp-models at tag v2.10.1 (commit
02480d86450dff1dfc2003f4ebd93d0347532a20), ``training_config/coref/coref.jsonnet``: Lee et al.
(2017)'s span ranking without speaker and genre features, the implementation allennlp published
for the paper's baseline. allennlp-models has no coreference configuration with ELMo; the ELMo
row adds ELMo to its text field embedder (the paper's input site). Every change is in
:data:`CHANGES`.

The data are the recipe's own document parts, in its order, one CoNLL-2012 file per split for
the ``coref`` reader (allennlp-models' ``Ontonotes`` column parser): 12 space-separated columns
``DOC PART INDEX WORD XX * - - - SPEAKER * COREF``, one blank line after each sentence and
``#begin document`` / ``#end document`` around each part. The POS tag ``XX`` is OntoNotes' own
mark of a token without syntax (the parser then builds no tree, which it would otherwise have to
assemble from the parse bits); the coreference column is the project's own encoding
(:func:`tasks.coref.evaluate.encode_clusters`), so the project's reader reads the file back to the
same sentences and clusters. allennlp's reader keeps singletons (``remove_singleton_clusters``
false), merges clusters that share a mention and keeps a mention once per cluster (the scorer
does the same with repeats); it resolves brackets sentence by sentence, so a gold mention that
crosses a sentence boundary (no candidate span can match it on either side) is left out of the
written file, while the project's scorer still counts it as missed.

Document offsets: the validation reader keeps whole documents, so the peer's ``clusters`` are
document-level inclusive token spans, the recipe's own coordinates.
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
from tasks.coref.evaluate import encode_clusters

#: allennlp-models' file this configuration follows.
SOURCE = f"{MODELS_RELEASE} training_config/coref/coref.jsonnet"

#: Every change from :data:`SOURCE`.
CHANGES = (
    "data: the project's own document parts of each split (after its reader's checks), in its "
    "order, as one CoNLL-2012 file per split (12 columns DOC PART INDEX WORD XX * - - - SPEAKER "
    "* COREF; POS XX so that the Ontonotes parser builds no parse tree) instead of the "
    "compiled OntoNotes files; gold mentions crossing a sentence boundary are not written (the "
    "reader resolves brackets per sentence; neither side can predict them, the project's scorer "
    "counts them as missed); whitespace inside a word is written as _",
    "GloVe 6B 50-d from a local text file (the embedded package exported as text) instead of "
    "glove.6B.300d from the download URL, still fixed; the single_id indexer lowercases "
    "(lowercase_tokens true instead of false) since these vectors are uncased, as the "
    "project's lookups of the package are; the widths that follow: context LSTM input 50 + 100 "
    "(+ the biLM's width with ELMo) instead of 400, mention FFNN input 4 x 200 + that + 20 "
    "instead of 1220, antecedent FFNN input 3 x the span width + 20 instead of 3680",
    "character embedding num_embeddings 262 as the file, or the data's distinct characters + 2 "
    "when there are more (allennlp's vocabulary would overflow 262 rows)",
    "training documents cut to their first max_training_sentences sentences (the project's "
    "paper preset: 50) with the reader's max_sentences, validation documents whole (a separate "
    "validation_dataset_reader, as coref_spanbert_large.jsonnet does); coref.jsonnet trains on "
    "whole documents, the project (as e2e-coref) on a random run of 50 sentences per epoch",
    "validation on the dev split; the test split (when the data has one) is given as "
    "test_data_path for vocabulary creation only (evaluate_on_test false), as the project "
    "indexes the test split's words",
    "one document per batch for training and validation, as the file (bucket sampler, "
    "padding_noise 0) and the project (its document batching ignores --batch-size); --batch-size "
    "defaults to 1 for this task and refuses another (PeerAdapter.batch_size), since the "
    "per-epoch scoring batches dev documents by the request's batch size and allennlp's coref "
    "scores padding spans of shorter documents in a batch",
    "num_epochs from the request (original 150), patience = epochs (original 10: no early "
    "stopping), cuda_device -1, every epoch's checkpoint kept (scored afterwards); the "
    "reduce_on_plateau schedule on dev coref_f1 (factor 0.5, patience 2) kept",
    "random_seed, numpy_seed and pytorch_seed all set to the run's seed",
    "ELMo (no coref ELMo configuration in allennlp-models 2.10.1): an elmo_characters indexer and "
    "an elmo_token_embedder (the shipped small biLM exported in the official layout, frozen, no "
    "layer norm, no dropout of its own) in the text field embedder, i.e. at the input as the "
    "paper (A.6) and the project's paper preset; the lexical dropout 0.5 covers it (the paper's "
    "50% ELMo dropout) and no l2 on its scalar weights (lambda 0, A.6). allennlp's text field is "
    "the whole document, so its biLM reads a document as one sequence (the project's reads "
    "sentence by sentence) and the attentive span head reads ELMo too",
    TIMING_CHANGE,
)

#: The character CNN of coref.jsonnet: 16-d embeddings over 262 ids, 100 filters of width 5.
CHAR_DIM, CHAR_FILTERS, CHAR_WIDTHS, CHAR_IDS = 16, 100, (5,), 262
#: The context biLSTM's units per direction (one layer).
CONTEXT_HIDDEN = 200
#: Width of the span width and distance embeddings.
FEATURE_SIZE = 20
#: Hidden layers and width of the mention and antecedent FFNNs, and their dropout.
FFNN_LAYERS, FFNN_HIDDEN, FFNN_DROPOUT = 2, 150, 0.2
#: Span pruning and antecedents of coref.jsonnet.
MAX_SPAN_WIDTH, SPANS_PER_WORD, MAX_ANTECEDENTS = 10, 0.4, 100
#: The columns written for every token besides DOC PART INDEX WORD ... SPEAKER ... COREF.
POS, PARSE, LEMMA, FRAMESET, SENSE, NAMED_ENTITY = "XX", "*", "-", "-", "-", "*"
#: The one batch size the coref peer runs with (see :data:`CHANGES`).
BATCH_SIZE = 1


def _document_name(document: Any) -> str:
    return f"document {document.document_id} part {document.part} ({document.path}:{document.line})"


def _cell(text: str, what: str, document: Any) -> str:
    """``text`` as one whitespace-free column (inner whitespace as ``_``, empty as ``-``)."""
    cell = "_".join(text.split())
    if what == "word" and not cell:
        raise ValueError(f"{_document_name(document)}: an empty word cannot be written as a column")
    return cell or "-"


def written_clusters(document: Any) -> list[list[tuple[int, int]]]:
    """The clusters :func:`write_data` writes for ``document``: its own, less the mentions that
    cross a sentence boundary (clusters left empty are dropped)."""
    sentence_of = [i for i, words in enumerate(document.sentences) for _ in words]
    out = []
    for cluster in document.clusters:
        kept = [(s, e) for s, e in cluster if sentence_of[s] == sentence_of[e]]
        if kept:
            out.append(kept)
    return out


def document_lines(document: Any) -> list[str]:
    """One document part in the ``coref`` reader's CoNLL-2012 columns (header to footer).

    Raises:
        ValueError: a document id the header cannot hold, or an empty word.
    """
    doc_id = document.document_id
    if not doc_id or len(doc_id.split()) != 1 or doc_id.startswith("#"):
        raise ValueError(f"{_document_name(document)}: the id cannot be written as a column")
    column = encode_clusters(document.num_tokens, written_clusters(document))
    lines = [f"#begin document ({doc_id}); part {document.part:03d}"]
    token = 0
    for words, speakers in zip(document.sentences, document.speakers, strict=True):
        for i, (word, speaker) in enumerate(zip(words, speakers, strict=True)):
            cells = [doc_id, str(document.part), str(i), _cell(word, "word", document)]
            cells += [POS, PARSE, LEMMA, FRAMESET, SENSE, _cell(speaker, "speaker", document)]
            cells += [NAMED_ENTITY, column[token]]
            lines.append(" ".join(cells))
            token += 1
        lines.append("")
    lines.append("#end document")
    return lines


def write_data(recipe: Any, folder: Path) -> dict[str, Path]:
    """The recipe's splits as CoNLL-2012 files: ``folder/<split>.gold_conll``."""
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for split, documents in recipe.splits.items():
        lines = [line for document in documents for line in document_lines(document)]
        path = folder / f"{split}.gold_conll"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[split] = path
    return files


def character_ids(recipe: Any) -> int:
    """Rows of the character embedding: the file's 262, or more when the data (every split:
    allennlp's vocabulary counts them all) has more distinct characters than 262 − 2."""
    chars = {
        c
        for documents in recipe.splits.values()
        for document in documents
        for words in document.sentences
        for word in words
        for c in word
    }
    return max(CHAR_IDS, len(chars) + 2)


def config(
    files: Mapping[str, Path], inputs: PeerInputs, run: PeerRun, recipe: Any
) -> dict[str, Any]:
    """allennlp's configuration of one run (:data:`SOURCE` with :data:`CHANGES`).

    Raises:
        ValueError: a batch size other than 1 (see :data:`CHANGES`).
    """
    if run.batch_size != BATCH_SIZE:
        raise ValueError(
            f"the coref peer trains and scores one document per batch (coref.jsonnet, and the "
            f"project's document batching); run it with --batch-size {BATCH_SIZE}, not "
            f"{run.batch_size}"
        )
    indexers: dict[str, Any] = {
        "tokens": {"type": "single_id", "lowercase_tokens": True},
        "token_characters": {"type": "characters", "min_padding_length": max(CHAR_WIDTHS)},
    }
    embedders: dict[str, Any] = {
        "tokens": glove_embedder(inputs, trainable=False),
        "token_characters": {
            "type": "character_encoding",
            "embedding": {"num_embeddings": character_ids(recipe), "embedding_dim": CHAR_DIM},
            "encoder": {
                "type": "cnn",
                "embedding_dim": CHAR_DIM,
                "num_filters": CHAR_FILTERS,
                "ngram_filter_sizes": list(CHAR_WIDTHS),
            },
        },
    }
    if run.elmo:
        indexers["elmo"] = {"type": "elmo_characters"}
        embedders["elmo"] = {"type": "elmo_token_embedder", **elmo_embedder(inputs)}
    text_dim = GLOVE_DIM + CHAR_FILTERS * len(CHAR_WIDTHS) + (inputs.elmo_dim if run.elmo else 0)
    # [start; end] of the biLSTM's output, the span width embedding and the attended text
    span_dim = 2 * 2 * CONTEXT_HIDDEN + FEATURE_SIZE + text_dim
    ffnn = {
        "num_layers": FFNN_LAYERS,
        "hidden_dims": FFNN_HIDDEN,
        "activations": "relu",
        "dropout": FFNN_DROPOUT,
    }
    model: dict[str, Any] = {
        "type": "coref",
        "text_field_embedder": {"token_embedders": embedders},
        "context_layer": {
            "type": "lstm",
            "bidirectional": True,
            "input_size": text_dim,
            "hidden_size": CONTEXT_HIDDEN,
            "num_layers": 1,
        },
        "mention_feedforward": {"input_dim": span_dim, **ffnn},
        # [g_i; g_j; g_i * g_j; distance embedding]
        "antecedent_feedforward": {"input_dim": 3 * span_dim + FEATURE_SIZE, **ffnn},
        "initializer": {
            "regexes": [
                [".*linear_layers.*weight", {"type": "xavier_normal"}],
                [".*scorer._module.weight", {"type": "xavier_normal"}],
                ["_distance_embedding.weight", {"type": "xavier_normal"}],
                ["_span_width_embedding.weight", {"type": "xavier_normal"}],
                ["_context_layer._module.weight_ih.*", {"type": "xavier_normal"}],
                ["_context_layer._module.weight_hh.*", {"type": "orthogonal"}],
            ]
        },
        "lexical_dropout": 0.5,
        "feature_size": FEATURE_SIZE,
        "max_span_width": MAX_SPAN_WIDTH,
        "spans_per_word": SPANS_PER_WORD,
        "max_antecedents": MAX_ANTECEDENTS,
    }
    reader: dict[str, Any] = {
        "type": "coref",
        "token_indexers": indexers,
        "max_span_width": MAX_SPAN_WIDTH,
    }
    out: dict[str, Any] = {
        "dataset_reader": {**reader, "max_sentences": recipe.config.max_training_sentences},
        "validation_dataset_reader": reader,
        "model": model,
        "data_loader": {
            "batch_sampler": {"type": "bucket", "padding_noise": 0.0, "batch_size": BATCH_SIZE}
        },
        "trainer": {
            "grad_norm": 5.0,
            "validation_metric": "+coref_f1",
            "learning_rate_scheduler": {
                "type": "reduce_on_plateau",
                "factor": 0.5,
                "mode": "max",
                "patience": 2,
            },
            "optimizer": {"type": "adam"},
        },
    }
    return as_requested(out, files, run)


def predictions(
    outputs: Sequence[Mapping[str, Any]], examples: Sequence[Any]
) -> dict[tuple[str, int], list[list[tuple[int, int]]]]:
    """The peer's predicted clusters per ``(document id, part)`` (the recipe's ``predict``
    format): each cluster a list of document-level inclusive ``(start, end)`` spans.

    Raises:
        ValueError: another number of outputs than ``examples``, no ``clusters``, or a mention
            that is not two integers inside its document (the document named).
    """
    check_count(outputs, examples, "resolved", "documents")
    out: dict[tuple[str, int], list[list[tuple[int, int]]]] = {}
    for output, document in zip(outputs, examples, strict=True):
        if "clusters" not in output:
            raise ValueError(f"{_document_name(document)}: the peer's output has no clusters")
        clusters = []
        for cluster in output["clusters"]:
            mentions = []
            for mention in cluster:
                pair = list(mention) if isinstance(mention, list | tuple) else None
                if pair is None or len(pair) != 2 or not all(type(x) is int for x in pair):
                    raise ValueError(
                        f"{_document_name(document)}: the peer's mention {mention!r} is not a "
                        "(start, end) pair of integers"
                    )
                start, end = pair
                if not 0 <= start <= end < document.num_tokens:
                    raise ValueError(
                        f"{_document_name(document)}: the peer's mention {(start, end)} lies "
                        f"outside its {document.num_tokens} tokens"
                    )
                mentions.append((start, end))
            if mentions:
                clusters.append(mentions)
        if document.key in out:
            raise ValueError(f"{_document_name(document)}: the split repeats this document")
        out[document.key] = clusters
    return out


PEER = peer_adapter(
    __name__,
    model="coref",
    packages=("allennlp_models.coref",),
    output_keys=("clusters",),
    metric_key="coref_f1",
    # the paper preset reads GloVe 840B + Turian 50-d; the peer gets the embedded 6B 50-d alone,
    # so the project too
    overrides=(*GLOVE_ONLY, "turian_vectors="),
    batch_size=BATCH_SIZE,
)
