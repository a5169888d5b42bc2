"""Score SRL props files as srl-eval.pl does, and write gold / predicted props files.

Usage::

    python -m tasks.srl.evaluate GOLD_PROPS PRED_PROPS           # like: perl srl-eval.pl GOLD PRED
    python -m tasks.srl.evaluate --conll-gold CONLL PRED_PROPS   # gold straight from *_conll data

prints a JSON report: overall ``precision`` / ``recall`` / ``f1`` (percent), the overall counts, one
entry per argument type, the excluded ``V`` counts and sentence/proposition counts.

Model predictions reach the scorer through the same path as the gold: BIO tags per predicate →
labelled spans → Start-End column → :func:`~tasks.srl.metric.proposition_from_tags`. Use
:func:`gold_columns` and :func:`predicted_columns` on the *same* sentences (same order) and
:func:`~tasks.srl.metric.write_props` to write the two files; the verb string of a proposition is
the predicate's word in both, so srl-eval.pl's verb check passes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from tasks.common.conll2012 import Sentence, read_sentences
from tasks.common.io import DataError, run_json_cli
from tasks.common.spans import spans_to_brackets, tags_to_spans
from tasks.srl.data import SRL_LAYERS
from tasks.srl.metric import (
    PropsColumn,
    PropsSentence,
    SrlEvaluation,
    evaluate_props,
    proposition_from_tags,
    read_props,
    write_props,
)

__all__ = [
    "gold_columns",
    "main",
    "predicted_columns",
    "props_sentences",
    "write_gold_props",
    "write_predicted_props",
]

SentenceColumns = tuple[int, list[PropsColumn]]
"""``(sentence length, one props column per proposition)``, the unit :func:`write_props` takes."""


def gold_columns(sentences: Iterable[Sentence]) -> Iterator[SentenceColumns]:
    """Gold props columns, one entry per sentence (predicate-less sentences included).

    Frames without a ``V`` span have no predicate row and are left out, as :mod:`tasks.srl.data`
    leaves them out of the instances. Nested arguments are kept (Start-End notation encodes them).

    Raises:
        ValueError: two frames of a sentence share a predicate position.
    """
    for sentence in sentences:
        columns = [
            PropsColumn(
                position=frame.predicate_index,
                verb=sentence.words[frame.predicate_index],
                tags=tuple(spans_to_brackets(len(sentence), frame.arguments)),
            )
            for frame in sentence.srl_frames
            if frame.predicate_index is not None
        ]
        _check_positions(sentence, columns)
        yield len(sentence), columns


def _check_positions(sentence: Sentence, columns: Sequence[PropsColumn]) -> None:
    positions = [c.position for c in columns]
    if len(set(positions)) != len(positions):
        raise ValueError(
            f"{sentence.document_id} part {sentence.part} sentence {sentence.index} (line "
            f"{sentence.line}): two predicate columns share a position; props cannot hold that"
        )


def predicted_columns(
    sentences: Iterable[Sentence], predictions: Mapping[tuple[int, int], Sequence[str]]
) -> Iterator[SentenceColumns]:
    """Predicted props columns aligned with :func:`gold_columns` on the same sentences.

    Args:
        sentences: the evaluated sentences, in the order used to build the instances.
        predictions: BIO tags keyed by ``(SrlInstance.sentence_id, SrlInstance.predicate_index)``.
            A gold predicate without a prediction is written without a column, which srl-eval.pl
            scores as all its arguments missed.

    Raises:
        ValueError: a prediction matches no predicate of the sentences, has the wrong length or
            holds a tag that is not BIO.
    """
    used = 0
    for sentence_id, sentence in enumerate(sentences):
        columns = []
        for frame in sentence.srl_frames:
            index = frame.predicate_index
            if index is None or (sentence_id, index) not in predictions:
                continue
            tags = predictions[(sentence_id, index)]
            if len(tags) != len(sentence):
                raise ValueError(
                    f"prediction {(sentence_id, index)}: {len(tags)} tags, {len(sentence)} tokens"
                )
            columns.append(
                PropsColumn(
                    position=index,
                    verb=sentence.words[index],
                    tags=tuple(spans_to_brackets(len(sentence), tags_to_spans(tags, "IOB2"))),
                )
            )
            used += 1
        _check_positions(sentence, columns)
        yield len(sentence), columns
    if used != len(predictions):
        raise ValueError(
            f"{len(predictions) - used} predictions match no predicate of the sentences"
        )


def props_sentences(columns: Iterable[SentenceColumns]) -> Iterator[PropsSentence]:
    """The in-memory equivalent of writing ``columns`` and reading them back with ``read_props``."""
    for length, sentence_columns in columns:
        yield PropsSentence(
            length,
            tuple(
                proposition_from_tags(c.verb, c.position, c.tags)
                for c in sorted(sentence_columns, key=lambda c: c.position)
            ),
        )


def write_gold_props(conll_path: str | Path, out_path: str | Path) -> None:
    """Write the gold props file of a CoNLL-2012 file or directory."""
    write_props(out_path, gold_columns(read_sentences(conll_path, layers=SRL_LAYERS)))


def write_predicted_props(
    conll_path: str | Path,
    predictions: Mapping[tuple[int, int], Sequence[str]],
    out_path: str | Path,
) -> None:
    """Write the predicted props file for predictions on a CoNLL-2012 file or directory."""
    write_props(
        out_path, predicted_columns(read_sentences(conll_path, layers=SRL_LAYERS), predictions)
    )


def _evaluate(gold: str, predicted: str, conll_gold: bool) -> SrlEvaluation:
    if conll_gold:
        gold_sentences = props_sentences(gold_columns(read_sentences(gold, layers=SRL_LAYERS)))
        return evaluate_props(gold_sentences, read_props(predicted))
    return evaluate_props(read_props(gold), read_props(predicted))


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tasks.srl.evaluate",
        description="SRL P/R/F1 with srl-eval.pl (CoNLL-2005) semantics; prints JSON.",
    )
    parser.add_argument("gold", help="gold props file (or CoNLL-2012 data with --conll-gold)")
    parser.add_argument("predicted", help="predicted props file")
    parser.add_argument(
        "--conll-gold",
        action="store_true",
        help="read GOLD as a CoNLL-2012 *_conll file or directory instead of a props file",
    )
    args = parser.parse_args(argv)
    return run_json_cli(
        lambda: _evaluate(args.gold, args.predicted, args.conll_gold).to_dict(),
        errors=(DataError, ValueError),
    )


if __name__ == "__main__":
    sys.exit(main())
