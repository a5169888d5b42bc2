"""SQuAD v1.1 (Rajpurkar et al., 2016): reader, official EM/F1 metric, evaluator, demo generator.

Peters et al. (2018), §4 "Question answering": F1 on SQuAD v1.1 (Table 1 test, Tables 2–3 dev).
``tasks.squad.demo`` builds the bundled DEMO set in the same format from public-domain text
(machine-generated questions; not SQuAD).
"""

from tasks.squad.data import (
    Answer,
    SquadExample,
    SquadNotAvailable,
    SquadReader,
    char_span_to_token_span,
    load_squad,
    read_squad,
    to_hf_dataset,
    tokenize,
)
from tasks.squad.metric import SquadMetric, evaluate, exact_match_score, f1_score, normalize_answer

__all__ = [
    "Answer",
    "SquadExample",
    "SquadMetric",
    "SquadNotAvailable",
    "SquadReader",
    "char_span_to_token_span",
    "evaluate",
    "exact_match_score",
    "f1_score",
    "load_squad",
    "normalize_answer",
    "read_squad",
    "to_hf_dataset",
    "tokenize",
]
