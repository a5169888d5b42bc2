"""SST-5's ``paper`` preset is M. Peters' BCN + ELMo configuration that
reached the paper's 54.7 (allennlp commit a27afe0b, "SST config with ELMo"): ELMo at the input
only, ELMo dropout 0.0, embedding dropout 0.5; the ``mini`` preset keeps allennlp's v0.5.0
placement (input and integrator output, ELMo dropout 0.5, embedding dropout 0.25). Both
allennlp configs batch with the bucket iterator (``padding_noise`` 0.1)."""

from __future__ import annotations

import dataclasses

import pytest

from bilm.scalar_mix import MixSpec
from experiments.plan.specs import base_spec
from tasks.core import PresetElmo
from tasks.features.inject import Injector
from tasks.registry import get_task
from tasks.representations import build_representation
from tasks.sst5.config import Sst5Config
from tasks.sst5.model import BiattentiveClassificationNetwork
from tasks.sst5.task import TASK
from tests.tasks.sst5.test_model import CONFIG, LABELS, FakeRepresentation, _vectors


def test_paper_elmo_runs_are_input_only_without_elmo_dropout() -> None:
    """Before: the paper preset's ELMo runs used input + output and ELMo dropout 0.5."""
    paper = base_spec(get_task("sst5"), "paper", "demo", {})
    assert (paper.sites, paper.dropout) == (("input",), 0.0)
    assert TASK.sites_for("paper") == {"input"} and TASK.elmo_dropout_for("paper") == 0.0


def test_mini_elmo_runs_keep_their_placement() -> None:
    mini = base_spec(get_task("sst5"), "mini", "demo", {})
    assert (mini.sites, mini.dropout) == (("input", "output"), 0.5)
    assert mini.mix == MixSpec("all", 0.001, False)


def _bcn(config: Sst5Config, represented: bool) -> BiattentiveClassificationNetwork:
    if represented:
        injector = Injector(FakeRepresentation(), frozenset({"input"}), dropout=0.0)
    else:
        injector = Injector(build_representation("none"), frozenset({"input"}))
    return BiattentiveClassificationNetwork(config, _vectors(), LABELS, injector)


def test_paper_embedding_dropout_is_half_with_elmo_only() -> None:
    """Before: 0.25 with ELMo (allennlp v0.5.0); a27afe0b: 0.5. The baseline keeps the BCN
    config's 0.25 (allennlp BCN, test 51.3 for the paper's 51.4)."""
    paper = TASK.configure("paper", ())
    assert (paper.embedding_dropout, paper.elmo_embedding_dropout) == (0.25, 0.5)
    sized = dataclasses.replace(
        paper, pre_encode_dim=6, encoder_hidden=5, integrator_hidden=4, output_dims=(7, 6)
    )
    assert _bcn(sized, represented=True).embedding_dropout.p == 0.5
    assert _bcn(sized, represented=False).embedding_dropout.p == 0.25


def test_mini_embedding_dropout_unchanged() -> None:
    mini = TASK.configure("mini", ())
    assert mini.elmo_embedding_dropout is None and mini.embedding_dropout == 0.25
    assert mini.embedding_dropout_for(True) == mini.embedding_dropout_for(False) == 0.25
    assert _bcn(CONFIG, represented=True).embedding_dropout.p == 0.25
    with pytest.raises(ValueError, match="embedding dropouts"):
        Sst5Config(elmo_embedding_dropout=1.0)


def test_presets_bucket_noise() -> None:
    assert TASK.configure("paper", ()).train.bucket_noise == 0.1  # allennlp bucket iterator
    assert TASK.configure("mini", ()).train.bucket_noise == 0.0  # mini keeps its batches


def test_preset_elmo_is_validated() -> None:
    with pytest.raises(ValueError, match="unknown preset"):
        dataclasses.replace(TASK, preset_elmo={"huge": PresetElmo(frozenset({"input"}), 0.0)})
    with pytest.raises(ValueError, match="unknown default sites"):
        dataclasses.replace(TASK, preset_elmo={"mini": PresetElmo(frozenset({"middle"}), 0.0)})
    with pytest.raises(ValueError, match="elmo_dropout"):
        dataclasses.replace(TASK, preset_elmo={"mini": PresetElmo(frozenset({"input"}), 1.0)})
    plain = dataclasses.replace(TASK, preset_elmo={})
    assert plain.sites_for("mini") == plain.default_sites
    assert plain.elmo_dropout_for("mini") == plain.elmo_dropout
