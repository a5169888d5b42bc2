"""The weight-transplant check: allennlp-models' ``dialog_qa`` weights in this model.

A trained ``dialog_qa`` run's weights are copied into :class:`~tasks.squad.model.BiDAFSelfAttention`
built with every ``dialog_qa`` choice (:data:`DIALOG_QA_CHOICES`); both models then read the same
batch, and the span log-probabilities, the loss and every gradient are compared. Given an
optimizer, both sides then take the same optimizer steps on that batch from the same weights
(without dropout) and the losses and weights after them are compared. Where all agree to
float32 rounding, the two models compute the same function and take the same steps, so any
difference in their learning curves comes from what the check leaves out: the random draws
(initial weights, dropout masks) and the batches (their order and composition).

The peer side runs in the peer's venv (``experiments/peer/allennlp_side/peer_qa_dump.py``) and
writes one file; :func:`compare` reads it. ``scripts/squad_parity.py`` runs both.

Two layouts differ without changing the function, and the copy undoes them:

* allennlp's ``BasicTextFieldEmbedder`` concatenates its embedders in sorted key order, so the
  phrase GRU reads ``[characters; words]`` (``token_characters`` < ``tokens``), here
  ``[words; characters]``: the columns of its input matrices are swapped back;
* ``dialog_qa`` merges the self-attention as ``[attended; residual; residual∘attended]``
  (``dialog_qa.py`` at v2.10.1), here ``[residual; attended; residual∘attended]``: the columns
  of that linear layer are swapped back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor

from tasks.features.inject import Injector
from tasks.nn.layers import VariationalDropout, masked_log_softmax
from tasks.representations import Layers, build_representation
from tasks.squad.model import BiDAFSelfAttention
from tasks.squad.task import SquadRecipe

#: The project-side configuration of ``dialog_qa`` (each field documented in
#: :class:`~tasks.squad.config.SquadConfig`); ``char_min_count=1`` gives every training character
#: its own row, as allennlp's byte ids do.
DIALOG_QA_CHOICES: tuple[str, ...] = (
    "char_cnn=allennlp",
    "char_dropout_on=words",
    "constant_heads=true",
    "fill_missing_words=true",
    "init=allennlp",
    "max_word_chars=64",
    "residual_input_dropout=false",
    "self_attention_null=false",
    "shared_paragraphs=true",
    "char_min_count=1",
)

#: Gradients below this norm are zero in exact arithmetic (the span logits' biases: a softmax
#: does not move when every logit does) and are left out of the relative comparison.
ZERO_GRADIENT = 1e-6
_EMBED = "_text_field_embedder.token_embedder_"
_CNN = _EMBED + "token_characters._encoder._module.conv_layer_0."
#: allennlp's byte ids of the word-boundary markers (``start_tokens`` / ``end_tokens``).
_BEGIN, _END = 259, 260
_GRUS = {
    "encoder": "_phrase_layer",
    "self_gru": "_residual_encoder",
    "start_gru": "_span_start_encoder",
    "end_gru": "_span_end_encoder",
}
_TRILINEAR = {"bi_attention": "_matrix_attention", "self_attention": "_self_attention"}
_LINEAR = {
    "attended": "_merge_atten",
    "self_linear": "_merge_self_attention",
    "start_out": "_span_start_predictor",
    "end_out": "_span_end_predictor",
}


def _swap_columns(w: Tensor, first: int) -> Tensor:
    """``w`` (out, in) with its first ``first`` input columns moved after the rest."""
    return torch.cat([w[:, first:], w[:, :first]], dim=1)


def project_tensors(
    peer: Mapping[str, Tensor],
    model: BiDAFSelfAttention,
    words: Mapping[str, int],
    chars: Mapping[str, int],
    tokens: Mapping[int, str],
) -> dict[str, Tensor]:
    """``dialog_qa``'s tensors (its weights or its gradients) named and laid out as ``model``'s
    parameters; a parameter whose tensor ``peer`` lacks (a frozen one's gradient) is left out.

    Args:
        peer: ``dialog_qa``'s ``state_dict`` or gradients, by allennlp parameter name.
        model: built with :data:`DIALOG_QA_CHOICES` (its character CNN has the markers).
        words, chars: the recipe's word and character vocabularies (word → row).
        tokens: allennlp's ``tokens`` namespace, index → (lowercased) word.

    Raises:
        ValueError: a character of more than one UTF-8 byte (allennlp gives it one id per
            byte, this model one row), or a model without the word-boundary markers.
    """
    if model.boundaries is None:
        raise ValueError("the model must be built with char_cnn=allennlp (word-boundary markers)")
    out: dict[str, Tensor] = {}
    if _EMBED + "tokens.weight" in peer:
        by_word = {w: i for i, w in tokens.items()}
        table = peer[_EMBED + "tokens.weight"]  # (allennlp vocab, word_dim)
        rows = torch.ones(model.words.weight.shape[0], dtype=torch.long)  # @@UNKNOWN@@ = 1
        rows[0] = 0  # padding
        for word, i in words.items():
            rows[i] = by_word.get(word.lower(), 1)
        out["words.weight"] = table[rows]  # (vocab, word_dim)
    char_table = peer[_EMBED + "token_characters._embedding._module.weight"]  # (262, char_dim)
    ids = torch.zeros(model.chars.embedding.weight.shape[0], dtype=torch.long)  # rows 0, 1: pad
    for char, i in chars.items():
        encoded = char.encode("utf-8")
        if len(encoded) != 1:
            raise ValueError(f"character {char!r} is {len(encoded)} UTF-8 bytes in allennlp's ids")
        ids[i] = encoded[0] + 1  # CharacterTokenizer(byte_encoding="utf-8") shifts bytes by one
    ids[model.boundaries[0]], ids[model.boundaries[1]] = _BEGIN, _END
    out["chars.embedding.weight"] = char_table[ids]
    out["chars.conv.weight"] = peer[_CNN + "weight"]
    out["chars.conv.bias"] = peer[_CNN + "bias"]
    n_chars = model.chars.output_dim
    for mine, theirs in _GRUS.items():
        for name, _ in getattr(model, mine).gru.named_parameters():
            w = peer[f"{theirs}._module.{name}"]
            if mine == "encoder" and name.startswith(
                "weight_ih"
            ):  # [chars; words] → [words; chars]
                w = _swap_columns(w, n_chars)
            out[f"{mine}.gru.{name}"] = w
    for mine, theirs in _TRILINEAR.items():
        d = getattr(model, mine).w_xy.numel()
        w = peer[f"{theirs}._weight_vector"]  # (3d,): x, y, x∘y ("x,y,x*y")
        out[f"{mine}.w_x.weight"], out[f"{mine}.w_y.weight"] = w[None, :d], w[None, d : 2 * d]
        out[f"{mine}.w_xy"], out[f"{mine}.bias"] = w[2 * d :], peer[f"{theirs}._bias"]
    for mine, theirs in _LINEAR.items():
        w = peer[f"{theirs}._module.weight"]
        if mine == "self_linear":  # [attended; residual; ·] → [residual; attended; ·]
            third = w.shape[1] // 3
            w = torch.cat([_swap_columns(w[:, : 2 * third], third), w[:, 2 * third :]], dim=1)
        out[f"{mine}.weight"], out[f"{mine}.bias"] = w, peer[f"{theirs}._module.bias"]
    if model.quac_heads is not None:  # yes/no rows, then follow-up rows
        out["quac_heads.weight"] = torch.cat(
            [peer["_span_yesno_predictor._module.weight"], peer["_followup_lin.weight"]]
        )
        out["quac_heads.bias"] = torch.cat(
            [peer["_span_yesno_predictor._module.bias"], peer["_followup_lin.bias"]]
        )
    return out


@dataclass(frozen=True)
class ParityReport:
    """How far the project's model is from ``dialog_qa`` on one batch, the same weights.

    Attributes:
        questions: questions in the batch.
        log_prob: the largest |difference| of the start and end log-probabilities over real
            context tokens (evaluation mode).
        eval_loss: (project, peer) loss in evaluation mode.
        train_loss: (project, peer) loss in training mode, every dropout rate 0.
        gradient: the largest relative difference ``‖g − g'‖ / ‖g'‖`` over the parameters
            (those whose gradient is below :data:`ZERO_GRADIENT` left out), and the parameter
            it belongs to.
        step_losses: (project, peer) loss of each optimizer step on the batch (none without
            an optimizer).
        stepped: the largest relative difference ``‖w − w'‖ / ‖w'‖`` of the trained weights
            after those steps, and its parameter.
    """

    questions: int
    log_prob: float
    eval_loss: tuple[float, float]
    train_loss: tuple[float, float]
    gradient: tuple[float, str]
    step_losses: tuple[tuple[float, float], ...] = ()
    stepped: tuple[float, str] = (0.0, "")

    def lines(self) -> list[str]:
        """The report as text."""
        g, name = self.gradient
        out = [
            f"{self.questions} questions, the same weights on both sides",
            f"span log-probabilities: largest |difference| {self.log_prob:.2e}",
            "loss, evaluation mode: project {:.6f}, dialog_qa {:.6f}".format(*self.eval_loss),
            "loss, training mode without dropout: project {:.6f}, dialog_qa {:.6f}".format(
                *self.train_loss
            ),
            f"gradients: largest relative difference {g:.2e} ({name})",
        ]
        if self.step_losses:
            pairs = ", ".join(f"{a:.6f}/{b:.6f}" for a, b in self.step_losses)
            w, where = self.stepped
            out.append(f"{len(self.step_losses)} optimizer steps, loss project/dialog_qa: {pairs}")
            out.append(f"weights after them: largest relative difference {w:.2e} ({where})")
        return out

    def worst(self) -> float:
        """The largest of the relative figures: log-probabilities, losses, gradients, steps."""
        losses = (self.eval_loss, self.train_loss, *self.step_losses)
        gaps = [abs(a - b) / max(abs(b), 1e-12) for a, b in losses]
        return max(self.log_prob, self.gradient[0], self.stepped[0], *gaps)


def _span_log_probs(logits: Tensor, mask: Tensor) -> Tensor:
    """Log-softmax over the real tokens; (questions, tc) → same, padding at 0."""
    return masked_log_softmax(logits, mask).masked_fill(~mask, 0.0)


def _relative(mine: Mapping[str, Tensor], theirs: Mapping[str, Tensor]) -> tuple[float, str]:
    """The largest ``‖a − b‖ / ‖b‖`` over the names both hold (tiny ``b`` left out)."""
    worst = (0.0, "")
    for name, ref in theirs.items():
        if name in mine and ref.norm() >= ZERO_GRADIENT:
            worst = max(worst, (float((mine[name] - ref).norm() / ref.norm()), name))
    return worst


def compare(
    recipe: SquadRecipe,
    dump: Path,
    optimizer: Callable[[Sequence[torch.nn.Parameter]], torch.optim.Optimizer] | None = None,
) -> ParityReport:
    """Transplant the weights in ``dump`` (``peer_qa_dump.py``'s file) into a model of
    ``recipe`` (SQuAD, configured with :data:`DIALOG_QA_CHOICES`) and compare on its batch;
    with ``optimizer`` (the project's for the trained parameters) also the dump's optimizer
    steps, taken here as many times from the same weights.

    Raises:
        KeyError: a question of the dump missing from the recipe's training split.
    """
    data = torch.load(dump, map_location="cpu", weights_only=False)
    by_id = {ex.qid: ex for ex in recipe.splits["train"]}
    examples = [by_id[qid] for qid in data["qids"]]
    model = recipe.build_model(Injector(build_representation("none"), frozenset(), dropout=0.0))
    assert isinstance(model, BiDAFSelfAttention)
    mapped = functools.partial(
        project_tensors, model=model, words=recipe.words, chars=recipe.chars, tokens=data["tokens"]
    )
    weights = mapped(data["state"])
    missing = set(dict(model.named_parameters())) - set(weights)
    if missing:
        raise ValueError(f"no dialog_qa tensor for {sorted(missing)}")
    model.load_state_dict(weights, strict=False)
    batch = recipe.collate(examples, lambda seqs: Layers.empty([len(s) for s in seqs]))
    mask = batch.context_mask
    if batch.context_index is not None:
        mask = mask[batch.context_index]  # (questions, tc)
    tc = mask.shape[1]
    model.eval()
    with torch.no_grad():
        out = model(batch)
    gaps = [
        (_span_log_probs(mine, mask) - _span_log_probs(theirs[:, :tc], mask)).abs().max()
        for mine, theirs in ((out.start_logits, data["start"]), (out.end_logits, data["end"]))
    ]
    eval_loss = float(out.loss)
    model.train()
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout | VariationalDropout):
            module.p = 0.0
    model.zero_grad()
    train = model(batch).loss
    assert train is not None
    train.backward()
    theirs = mapped(data["grads"])
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    worst = _relative(grads, theirs)
    step_losses: list[tuple[float, float]] = []
    stepped = (0.0, "")
    if optimizer is not None and data.get("step_losses"):
        trained = [p for p in model.parameters() if p.requires_grad]
        opt = optimizer(trained)
        for peer_loss in data["step_losses"]:
            opt.zero_grad()
            step = model(batch).loss
            assert step is not None
            step.backward()
            opt.step()
            step_losses.append((float(step.detach()), float(peer_loss)))
        after = mapped(data["stepped"])
        mine = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
        stepped = _relative(mine, after)
    return ParityReport(
        questions=len(examples),
        log_prob=float(max(gaps)),
        eval_loss=(eval_loss, float(data["eval_loss"])),
        train_loss=(float(train.detach()), float(data["train_loss"])),
        gradient=worst,
        step_losses=tuple(step_losses),
        stepped=stepped,
    )
