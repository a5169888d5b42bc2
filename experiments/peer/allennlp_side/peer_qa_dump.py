"""One batch through a trained ``dialog_qa_spans`` model, for the weight-transplant check
(runs in the peer's venv, not here; the project side is :mod:`tasks.squad.parity`).

    PEER_PYTHON peer_qa_dump.py SERIALIZATION_DIR EPOCH DATA.json PARAGRAPHS OUT.pt [--steps K]

Loads the archived configuration and vocabulary of an allennlp training run and the weights
after ``EPOCH`` (``model_state_e<EPOCH>_b0.th``; ``init`` keeps the freshly drawn ones), reads
the first ``PARAGRAPHS`` instances (paragraphs with all their questions) of ``DATA.json`` with
the run's dataset reader, and saves with ``torch.save``:

* ``state``: the model's ``state_dict``; ``tokens``: the ``tokens`` namespace, index → word;
* ``qids``: the questions in batch order (paragraph by paragraph);
* ``start``, ``end``: the span logits ``dialog_qa`` decodes from, in evaluation mode
  (batch · questions, passage length), padding at its large negative value;
* ``eval_loss``: its loss in evaluation mode;
* ``train_loss``, ``grads``: the loss and every parameter's gradient of one backward pass in
  training mode with every dropout rate set to 0 (so that both sides compute the same function);
* ``step_losses``, ``stepped``: with ``--steps K``, the losses of ``K`` optimizer steps on that
  batch (training mode, no dropout) by the run's own optimizer (its configuration's
  ``trainer.optimizer``, built as allennlp's trainer builds it), and the ``state_dict`` after them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import peer_qa  # noqa: F401  (registers dialog_qa_spans and the whitespace tokenizer)
import torch
from allennlp.common import Params
from allennlp.data import Batch, DatasetReader, Vocabulary
from allennlp.models import Model
from allennlp.training.optimizers import Optimizer
from allennlp_models.rc.dataset_readers import quac  # noqa: F401  (registers "quac")
from allennlp_models.rc.models.dialog_qa import DialogQA


def _logits_of(model: Model, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The start and end logits dialog_qa decodes from, and the loss (evaluation mode)."""
    seen: dict[str, torch.Tensor] = {}
    decode = DialogQA._get_best_span_yesno_followup

    def grab(start: torch.Tensor, end: torch.Tensor, *rest: Any) -> torch.Tensor:
        seen["start"], seen["end"] = start.detach().clone(), end.detach().clone()
        return decode(start, end, *rest)

    DialogQA._get_best_span_yesno_followup = staticmethod(grab)
    try:
        model.eval()
        with torch.no_grad():
            loss = model(**batch)["loss"].item()
    finally:
        DialogQA._get_best_span_yesno_followup = staticmethod(decode)
    return seen["start"], seen["end"], loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("serialization_dir", type=Path)
    parser.add_argument("epoch", help="N (weights after epoch N) or init")
    parser.add_argument("data", type=Path)
    parser.add_argument("paragraphs", type=int)
    parser.add_argument("out", type=Path)
    parser.add_argument("--steps", type=int, default=0, help="optimizer steps on the batch")
    args = parser.parse_args()
    torch.set_num_threads(1)
    params = Params.from_file(str(args.serialization_dir / "config.json"))
    optimizer_params = params["trainer"]["optimizer"].duplicate()
    vocab = Vocabulary.from_files(str(args.serialization_dir / "vocabulary"))
    reader = DatasetReader.from_params(params.pop("dataset_reader"))
    model = Model.from_params(vocab=vocab, params=params.pop("model"))
    if args.epoch != "init":
        weights = args.serialization_dir / f"model_state_e{args.epoch}_b0.th"
        model.load_state_dict(torch.load(weights, map_location="cpu"))
    instances = []
    for instance in reader.read(str(args.data)):
        instance.index_fields(vocab)
        instances.append(instance)
        if len(instances) == args.paragraphs:
            break
    batch = Batch(instances).as_tensor_dict()
    start, end, eval_loss = _logits_of(model, batch)
    qids = [q for m in batch["metadata"] for q in m["instance_id"]]
    model.train()
    for module in model.modules():  # InputVariationalDropout is a torch.nn.Dropout
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    model.zero_grad()
    loss = model(**batch)["loss"]
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    state = {n: t.detach().clone() for n, t in model.state_dict().items()}  # before any step
    trained = [[n, p] for n, p in model.named_parameters() if p.requires_grad]
    optimizer = Optimizer.from_params(model_parameters=trained, params=optimizer_params)
    step_losses = []
    for _ in range(args.steps):
        optimizer.zero_grad()
        step = model(**batch)["loss"]
        step.backward()
        optimizer.step()
        step_losses.append(step.item())
    torch.save(
        {
            "state": state,
            "tokens": vocab.get_index_to_token_vocabulary("tokens"),
            "qids": qids,
            "start": start,
            "end": end,
            "eval_loss": eval_loss,
            "train_loss": loss.item(),
            "grads": grads,
            "step_losses": step_losses,
            "stepped": {n: t.detach().clone() for n, t in model.state_dict().items()},
        },
        args.out,
    )
    print(f"{len(qids)} questions of {len(instances)} paragraphs -> {args.out}")


if __name__ == "__main__":
    main()
