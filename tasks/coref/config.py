"""Coreference configurations: ``paper`` (Lee et al. 2017, e2e-coref ``best`` as used by Peters
et al. 2018, A.6) and ``mini`` (CPU minutes on the DEMO set). Widths that follow from other parts
(embedding sizes, span and pair widths, ELMo width) are computed in the model, never typed here.

Sources: docs/reference/coref.md; e2e-coref @53c4116 ``experiments.conf`` ``best`` and ``util.py``
(``EmbeddingDictionary(normalize=True)``, ``cnn``, ``ffnn``); Lee et al. (2017) §5 (pruning,
non-crossing spans, K antecedents).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from tasks.common.vocab import GLOVE_840B
from tasks.core import Optimizer, Schedule, TrainConfig, added_field

#: ``turian_vectors`` value of the paper preset until a file is given (``--turian PATH``).
TURIAN_50D = "turian-50d"
TURIAN_URL = "http://metaoptimize.s3.amazonaws.com/cw-embeddings-ACL2010/embeddings-scaled.EMBEDDING_SIZE=50.txt.gz"

#: The paper's training: Adam 1e-3 decayed ×0.999 every 100 steps, gradient norm 5, one document
#: per step, evaluation every 5,000 steps; e2e-coref's README: "generally converges at about 400k
#: steps" (≈ 143 epochs of the 2,802 training documents). source: e2e-coref ``best``.
PAPER_TRAINING = TrainConfig(
    epochs=150,
    patience=None,
    batching="document",
    batch_size=1,
    optimizer=Optimizer("adam", lr=1e-3),
    schedule=Schedule("exponential", factor=0.999, every=100),
    clip_norm=5.0,
    ema=0.0,
    eval_every=5000,
)


@dataclass(frozen=True)
class CorefConfig:
    """Hyper-parameters of the span-ranking model (Lee et al. 2017)."""

    # Fixed word vectors, case-sensitive. source: e2e-coref ``best``: GloVe 840B 300-d (filtered
    # to the vocabulary) + Turian 50-d. "glove-840b" must be given (`--glove PATH`), "glove" = the
    # embedded 6B 50-d package (mini), a file path, or "random:DIM" (tests).
    word_vectors: str = GLOVE_840B
    # Turian et al. (2010) 50-d vectors (a GloVe-format text file: word then 50 numbers).
    # "turian-50d" = required but not given (the lead's `--turian PATH` sets this field); "" = none.
    turian_vectors: str = TURIAN_50D
    lowercase_words: bool = False  # source: e2e-coref (lowercase = false for both files)
    normalize_word_vectors: bool = (
        True  # source: e2e-coref util.EmbeddingDictionary(normalize=True)
    )
    char_dim: int = 8  # source: e2e-coref best (char_embedding_size)
    char_widths: tuple[int, ...] = (3, 4, 5)  # source: e2e-coref best (filter_widths)
    char_filters: int = 50  # per width; source: e2e-coref best (filter_size)
    max_word_chars: int = 30  # deviation: e2e-coref pads to the longest word; longer words are cut
    hidden: int = 200  # biLSTM units per direction, 1 layer; source: contextualization_size
    ffnn_size: int = 150  # source: e2e-coref best
    ffnn_depth: int = 2  # hidden layers of the mention and antecedent scorers; source: best
    feature_size: int = 20  # width, distance, speaker, genre embeddings; source: best
    max_span_width: int = 10  # source: max_mention_width
    spans_per_word: float = 0.4  # λ; source: mention_ratio
    max_antecedents: int = 250  # K; source: max_antecedents
    max_training_sentences: int = 50  # training documents cut to this; source: best
    use_metadata: bool = True  # same-speaker and genre features; source: use_metadata
    use_features: bool = True  # width and distance features; source: use_features
    model_heads: bool = True  # head-finding attention; source: model_heads
    lexical_dropout: float = 0.5  # source: lexical_dropout_rate
    # Dropout after the biLSTM, in the FFNNs, on the features and (one mask per sentence over
    # time) on the LSTM's recurrent state. source: dropout_rate, e2e-coref CustomLSTMCell
    dropout: float = 0.2
    # Antecedent scoring runs over blocks of this many mentions (checkpointed in training when a
    # document needs several), so memory grows with block × K, never with length² (not a number
    # changer: the scores are identical).
    antecedent_block: int = 128
    # Training documents with more tokens raise a DataError (None: no limit; paper: none); dev
    # and test documents are never refused for their length (scored whole).
    max_document_tokens: int | None = None
    train: TrainConfig = field(default_factory=lambda: PAPER_TRAINING)
    # The head attention's values: the lexical text (e2e-coref: head_emb, GloVe and characters,
    # its ELMo in context_emb alone), or that text with the input site's representation beside
    # it (allennlp-models coref.py: the head attention reads the whole text field embedding).
    head_reads_elmo: bool = added_field(
        False, why="the head attention also reads the input site's representation (allennlp)"
    )
    # The initialisation of the FFNNs (mention and pair scorers) and of the feature embeddings
    # (width, distance, speaker, genre): "torch" (PyTorch's module defaults: uniform ±1/√fan_in
    # weights, N(0, 1) embeddings) or "allennlp" (Xavier-normal weights and embeddings, as the
    # initializer of allennlp-models v2.10.1 training_config/coref/coref.jsonnet); the context
    # LSTM keeps e2e-coref's initialisation either way.
    init: Literal["torch", "allennlp"] = added_field(
        "torch", why="Xavier-normal FFNN weights and feature embeddings (allennlp coref.jsonnet)"
    )
    # What the representation reads: each sentence as a sequence (e2e-coref ``cache_elmo.py``
    # runs the biLM sentence by sentence), or the whole document as one token sequence
    # (allennlp-models coref: one text field per document, so its ELMo embedder reads the
    # document at once and the forward LM sees the sentences before each one).
    document_as_one_sequence: bool = added_field(
        False, why="the representation reads each document as one token sequence (allennlp)"
    )
    # Where the model's dropout ``dropout`` applies: "e2e" (e2e-coref: the context LSTM's
    # recurrent mask, its output, the width and pair feature embeddings and between the FFNN
    # layers) or "allennlp" (allennlp-models v2.10.1 coref.py: between the FFNN layers only, its
    # ``mention_feedforward`` and ``antecedent_feedforward``; its context LSTM, its output and
    # its feature embeddings carry none). The lexical dropout applies either way.
    dropout_sites: Literal["e2e", "allennlp"] = added_field(
        "e2e", why="dropout between the FFNN layers only, as allennlp's coref model"
    )

    def __post_init__(self) -> None:
        if not 0.0 < self.spans_per_word <= 1.0:
            raise ValueError(f"spans_per_word must be in (0, 1], got {self.spans_per_word}")
        if min(self.max_span_width, self.max_antecedents, self.max_training_sentences) < 1:
            raise ValueError("max_span_width, max_antecedents, max_training_sentences must be >= 1")
        if self.init not in ("torch", "allennlp"):
            raise ValueError(f"init must be 'torch' or 'allennlp', got {self.init!r}")
        if self.dropout_sites not in ("e2e", "allennlp"):
            sites = self.dropout_sites
            raise ValueError(f"dropout_sites must be 'e2e' or 'allennlp', got {sites!r}")
        if self.antecedent_block < 1:
            raise ValueError("antecedent_block must be >= 1")
        if not self.char_widths or min(self.char_widths) < 1:
            raise ValueError(f"char_widths must be positive, got {self.char_widths}")


def mini() -> CorefConfig:
    """The ``mini`` preset: ``paper`` with the deviations below.

    ``mini`` deviations (CPU, DEMO set; chosen here): the embedded GloVe 6B 50-d (lowercased)
    and no Turian vectors, char CNN 16 filters per width, biLSTM 32 per direction, FFNNs 2 × 64,
    features 16-d, K = 50 antecedents, Adam 1e-2 instead of 1e-3 (with 1e-3 dev F1 is still 0
    after 360 steps; with 1e-2 the model links from about 450 steps on; the ×0.999 per 100 steps
    decay is the paper's), at most 8 epochs of the 200 DEMO training documents with evaluation
    after each and early stopping after 3 without a better dev CoNLL F1.
    """
    return CorefConfig(
        word_vectors="glove",
        turian_vectors="",
        lowercase_words=True,
        char_filters=16,
        max_word_chars=20,
        hidden=32,
        ffnn_size=64,
        feature_size=16,
        max_antecedents=50,
        train=replace(
            PAPER_TRAINING,
            epochs=8,
            patience=3,
            optimizer=Optimizer("adam", lr=1e-2),
            eval_every=None,
        ),
    )


def paper() -> CorefConfig:
    """The ``paper`` preset: :class:`CorefConfig`'s defaults, with the FFNNs and feature
    embeddings initialised as allennlp-models' ``coref`` initialises them (``init="allennlp"``:
    the initializer of v2.10.1 ``training_config/coref/coref.jsonnet``), the implementation the
    harness trains beside this one. With PyTorch's defaults the ELMo rows linked no mentions in
    their first epoch where allennlp's did (tasks/coref/README.md, reference parity). ``init`` is
    an added field whose class default keeps PyTorch's draws, so the ``mini`` preset and its
    stored runs are unchanged."""
    return CorefConfig(init="allennlp")


#: Preset name → builder of its configuration; the first is the default.
PRESETS: dict[str, Callable[[], CorefConfig]] = {"mini": mini, "paper": paper}
