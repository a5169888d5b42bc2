"""bilm: ELMo's biLM (Peters et al., 2018) in modern PyTorch.

Public API::

    from bilm import BiLM, BiLMOptions, batch_to_ids, load_official, ScalarMix, Elmo
"""

from bilm.bilm import STATE_POLICIES, WARMUP_TEXT, BiLM, BiLMOutput, StatePolicy
from bilm.chars import batch_to_ids, word_to_char_ids
from bilm.options import BiLMOptions, CharCNNOptions, LSTMOptions, OptionsError
from bilm.weights import (
    WeightsError,
    export_official,
    init_weights,
    load_checkpoint,
    load_official,
    save_checkpoint,
)

__all__ = [
    "STATE_POLICIES",
    "WARMUP_TEXT",
    "BiLM",
    "BiLMOptions",
    "BiLMOutput",
    "CharCNNOptions",
    "LSTMOptions",
    "OptionsError",
    "StatePolicy",
    "WeightsError",
    "batch_to_ids",
    "export_official",
    "init_weights",
    "load_checkpoint",
    "load_official",
    "save_checkpoint",
    "word_to_char_ids",
]
