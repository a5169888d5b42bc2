"""bilm: ELMo's biLM (Peters et al., 2018) in modern PyTorch.

Public API::

    from bilm import BiLM, BiLMOptions, batch_to_ids, load_official, ScalarMix, Elmo

    bilm = load_official("options.json", "weights.hdf5", state="reset")
    out = bilm(batch_to_ids([["The", "cat", "sat", "."]]))
    out.layers  # (3, 1, 4, 1024): token layer, biLSTM 1, biLSTM 2
"""

from bilm.bilm import STATE_POLICIES, WARMUP_TEXT, BiLM, BiLMOutput, StatePolicy
from bilm.chars import batch_to_ids, word_to_char_ids
from bilm.elmo import Elmo, ElmoOutput
from bilm.options import BiLMOptions, CharCNNOptions, LSTMOptions, OptionsError
from bilm.scalar_mix import MIX_MODES, MixMode, MixSpec, ScalarMix
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
    "Elmo",
    "ElmoOutput",
    "LSTMOptions",
    "MIX_MODES",
    "MixMode",
    "MixSpec",
    "OptionsError",
    "ScalarMix",
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
