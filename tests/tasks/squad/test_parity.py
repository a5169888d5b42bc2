"""The weight-transplant check of SQuAD's model against allennlp-models' ``dialog_qa``."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tasks.features.inject import Injector
from tasks.representations import build_representation
from tasks.squad.config import SquadConfig
from tasks.squad.model import ALLENNLP_CHAR_ROWS, BiDAFSelfAttention
from tasks.squad.parity import project_tensors
from tests.tasks.squad.test_model import CONFIG as MODEL_CONFIG

REPO = Path(__file__).resolve().parents[3]
# the model tests' tiny model, with dialog_qa's choices
CONFIG = dataclasses.replace(
    MODEL_CONFIG,
    char_cnn="allennlp",
    constant_heads=True,
    self_attention_null=False,
    init="allennlp",
)
WORDS = {"The": 2, "cat": 3, "sat": 4}
CHARS = {c: i for i, c in enumerate("Thecats", start=2)}


def _model(config: SquadConfig = CONFIG) -> BiDAFSelfAttention:
    torch.manual_seed(0)
    injector = Injector(build_representation("none"), frozenset(), dropout=0.0)
    return BiDAFSelfAttention(config, torch.randn(len(WORDS) + 2, 7), len(CHARS) + 2, injector)


def _as_dialog_qa(model: BiDAFSelfAttention) -> tuple[dict[str, torch.Tensor], dict[int, str]]:
    """``model``'s parameters laid out as dialog_qa's ``state_dict`` (written out by hand from
    allennlp's module names), and allennlp's ``tokens`` namespace."""
    p = dict(model.named_parameters())
    tokens = {0: "@@PADDING@@", 1: "@@UNKNOWN@@", 2: "sat", 3: "the", 4: "cat"}
    table = torch.zeros(len(tokens), 7)
    for word, i in WORDS.items():
        table[[k for k, w in tokens.items() if w == word.lower()][0]] = p["words.weight"][i]
    table[:2] = p["words.weight"][:2]  # padding, unknown
    chars = torch.zeros(ALLENNLP_CHAR_ROWS, CONFIG.char_dim)
    for char, i in CHARS.items():
        chars[ord(char) + 1] = p["chars.embedding.weight"][i]
    assert model.boundaries is not None
    chars[259], chars[260] = (p["chars.embedding.weight"][i] for i in model.boundaries)
    embed = "_text_field_embedder.token_embedder_"
    cnn = embed + "token_characters._encoder._module.conv_layer_0."
    state = {
        embed + "tokens.weight": table,
        embed + "token_characters._embedding._module.weight": chars,
        cnn + "weight": p["chars.conv.weight"],
        cnn + "bias": p["chars.conv.bias"],
    }
    grus = {"encoder": "_phrase_layer", "self_gru": "_residual_encoder"}
    grus |= {"start_gru": "_span_start_encoder", "end_gru": "_span_end_encoder"}
    for mine, theirs in grus.items():
        for name, w in getattr(model, mine).gru.named_parameters():
            if mine == "encoder" and name.startswith("weight_ih"):  # allennlp: [chars; words]
                w = torch.cat([w[:, 7:], w[:, :7]], dim=1)
            state[f"{theirs}._module.{name}"] = w
    for mine, theirs in {
        "bi_attention": "_matrix_attention",
        "self_attention": "_self_attention",
    }.items():
        att = getattr(model, mine)
        state[f"{theirs}._weight_vector"] = torch.cat(
            [att.w_x.weight[0], att.w_y.weight[0], att.w_xy]
        )
        state[f"{theirs}._bias"] = att.bias
    linear = {"attended": "_merge_atten", "self_linear": "_merge_self_attention"}
    linear |= {"start_out": "_span_start_predictor", "end_out": "_span_end_predictor"}
    for mine, theirs in linear.items():
        w = getattr(model, mine).weight
        if mine == "self_linear":  # allennlp: [attended; residual; residual∘attended]
            k = w.shape[1] // 3
            w = torch.cat([w[:, k : 2 * k], w[:, :k], w[:, 2 * k :]], dim=1)
        state[f"{theirs}._module.weight"] = w
        state[f"{theirs}._module.bias"] = getattr(model, mine).bias
    assert model.quac_heads is not None
    state["_span_yesno_predictor._module.weight"] = model.quac_heads.weight[:3]
    state["_span_yesno_predictor._module.bias"] = model.quac_heads.bias[:3]
    state["_followup_lin.weight"] = model.quac_heads.weight[3:]
    state["_followup_lin.bias"] = model.quac_heads.bias[3:]
    return state, tokens


def test_dialog_qa_layout_maps_back_onto_every_parameter() -> None:
    model = _model()
    state, tokens = _as_dialog_qa(model)
    mapped = project_tensors(state, model, WORDS, CHARS, tokens)
    params = dict(model.named_parameters())
    assert set(mapped) == set(params)
    for name, value in mapped.items():
        if name == "chars.embedding.weight":  # the unknown character has no byte id: row 1
            value, ref = value[2:], params[name][2:]
        else:
            ref = params[name]
        torch.testing.assert_close(value, ref, rtol=0, atol=0, msg=name)


def test_a_frozen_embedding_without_gradient_is_left_out() -> None:
    model = _model()
    state, tokens = _as_dialog_qa(model)
    del state["_text_field_embedder.token_embedder_tokens.weight"]
    assert "words.weight" not in project_tensors(state, model, WORDS, CHARS, tokens)


def test_refuses_multibyte_characters_and_a_model_without_markers() -> None:
    model = _model()
    state, tokens = _as_dialog_qa(model)
    with pytest.raises(ValueError, match="UTF-8 bytes"):
        project_tensors(state, model, WORDS, {**CHARS, "é": 9}, tokens)
    plain = _model(dataclasses.replace(CONFIG, char_cnn="document-qa"))
    with pytest.raises(ValueError, match="char_cnn=allennlp"):
        project_tensors(state, plain, WORDS, CHARS, tokens)


def _peer_run() -> Path | None:
    """A trained baseline ``dialog_qa`` run of ``nox -s peer -- --task squad``, if any."""
    for config in sorted((REPO / "runs/peer/squad/peer").glob("*/run/model/config.json")):
        if "elmo_token_embedder" not in config.read_text(encoding="utf-8"):
            if (config.parent / "model_state_e3_b0.th").is_file():
                return config.parent
    return None


@pytest.mark.slow
def test_dialog_qa_weights_give_the_same_function_here() -> None:
    """A trained dialog_qa run's weights, the same batch: span log-probabilities, loss and
    gradients agree to float32 rounding (``scripts/squad_parity.py``)."""
    run = _peer_run()
    # the user's own peer venv: the test session's cache (conftest) is a private, empty one
    venv = Path(os.environ.get("PEER_VENV") or Path.home() / ".cache/elmo-bench/peer/venv")
    python = venv / "bin" / "python"
    if not python.is_file() or run is None:
        pytest.skip(
            "needs the peer venv and a trained SQuAD peer run (nox -s peer -- --task squad)"
        )
    script = [sys.executable, str(REPO / "scripts/squad_parity.py"), str(run), "--epoch", "3"]
    script += ["--python", str(python)]
    done = subprocess.run(script, capture_output=True, text=True, check=False, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout
