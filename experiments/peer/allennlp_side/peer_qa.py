"""What SQuAD's peer, allennlp-models' ``dialog_qa``, needs besides allennlp (runs in the peer's
venv; never imported by the project).

Loaded there with ``--include-package peer_qa`` (:mod:`experiments.peer.run` puts this folder on
the peer's ``PYTHONPATH``):

* the tokenizer ``peer_whitespace_offsets``: whitespace tokens *with* their character offsets.
  The project writes each paragraph and question as its own tokens joined by single spaces, so
  splitting on whitespace gives both sides the same tokens; allennlp's ``whitespace`` tokenizer
  leaves ``Token.idx`` empty, which the ``quac`` reader needs to map answers to tokens.
* the model ``dialog_qa_spans``: ``dialog_qa`` itself (same parameters, forward pass, loss and
  decoding) that also returns each question's decoded token span, ``best_span`` (one
  ``[start, end]`` per question, inclusive, in the paragraph's tokens), so that the project can
  turn the span into text the way its own predictions are (from the original paragraph), not
  from the joined tokens.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from allennlp.data.tokenizers import Token, Tokenizer
from allennlp.models.model import Model
from allennlp_models.rc.models.dialog_qa import DialogQA

_WORD = re.compile(r"\S+")


@Tokenizer.register("peer_whitespace_offsets")
class WhitespaceWithOffsets(Tokenizer):
    """Whitespace tokens, each with its character offset (``Token.idx``)."""

    def tokenize(self, text: str) -> list[Token]:
        return [Token(m.group(), idx=m.start()) for m in _WORD.finditer(text)]


@Model.register("dialog_qa_spans")
class DialogQASpans(DialogQA):
    """``dialog_qa`` that also outputs the decoded token spans (``best_span``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last_spans: torch.Tensor | None = None

    def _get_best_span_yesno_followup(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        # the parent's own decoding (a static method), kept for forward's output
        spans = DialogQA._get_best_span_yesno_followup(*args, **kwargs)
        self._last_spans = spans
        return spans

    def forward(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        output = super().forward(*args, **kwargs)
        assert self._last_spans is not None
        spans = self._last_spans[:, :2].tolist()  # (batch * questions, [start, end])
        questions = len(spans) // max(1, len(output["qid"]))
        output["best_span"] = [
            spans[i * questions : i * questions + len(ids)] for i, ids in enumerate(output["qid"])
        ]
        return output
