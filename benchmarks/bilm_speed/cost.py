"""The cost model of the biLM speed benchmark: tokens, positions and FLOPs of a batch.

Three counts per batch (:func:`batch_cost`): *nominal* (the char CNN and every LSTM product at
every position, as a plain implementation computes), *executed* (what :mod:`bilm` computes: the
char CNN once per distinct token and, where the per-word table is used, layer 0's input products
once per distinct token) and the *floor* (the context-dependent products alone, which no exact
fp32 computation of the three layers avoids). The benchmark divides them by the measured time
and compares the rate with the GEMM roofline. Nothing is timed here; ``python
benchmarks/bench_bilm.py --quick`` prints the figures for a small model.
"""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.common import cnn_macs_per_token, lstm_macs_per_cell_step
from bilm import BiLMOptions, word_to_char_ids
from bilm.lstm import uses_word_table


def macs_per_position_lstm(options: BiLMOptions) -> int:
    """Multiply-adds of all LSTM cells (both directions, every layer) at one position."""
    return options.lstm.n_layers * 2 * lstm_macs_per_cell_step(options)


def layer0_input_macs(options: BiLMOptions) -> int:
    """Multiply-adds of layer 0's input products (both directions) at one position: ``2·P·4C``.

    They depend only on the word, so inference computes them once per distinct word of a batch
    when the batch's table is worth it (:func:`bilm.lstm.uses_word_table`).
    """
    return 2 * options.lstm.projection_dim * 4 * options.lstm.dim


def batch_cost(sentences: Sequence[Sequence[str]], options: BiLMOptions) -> dict[str, float]:
    """Tokens, positions, distinct tokens and FLOPs of one batch.

    ``nominal``: the char CNN and every LSTM product at every position. ``executed``: what the
    implementation computes (char CNN and, where the per-word table is used, layer 0's input
    products once per distinct token). ``floor``: the products that depend on the context at
    every real token (in each direction and layer the state product, the projection, and from
    layer 1 on the input product), i.e. the cost left if the token layer, layer 0's input
    products and the sentence-boundary steps came free; every token's outputs need these
    products, so no exact fp32 computation of the three layers does less.

    Args:
        sentences: the batch's tokenised sentences.
        options: the biLM's architecture.

    Returns:
        ``tokens``, ``positions`` (with ``<S>``/``</S>``), ``distinct`` (with the two boundary
        tokens), ``nominal_flop``, ``executed_flop`` and ``floor_flop``.
    """
    cnn = 2 * cnn_macs_per_token(options.char_cnn, options.lstm.projection_dim)
    lstm = 2 * macs_per_position_lstm(options)
    layer0_in = 2 * layer0_input_macs(options)
    max_chars = options.char_cnn.max_characters_per_token
    tokens = sum(len(s) for s in sentences)
    positions = tokens + 2 * len(sentences)  # + <S> and </S> of every sentence
    distinct = {tuple(word_to_char_ids(w, max_chars)) for s in sentences for w in s}
    n_distinct = len(distinct) + (2 if sentences else 0)  # + the two boundary tokens
    table = uses_word_table(n_distinct, positions)
    floor = tokens * (lstm - layer0_in)
    return {
        "tokens": tokens,
        "positions": positions,
        "distinct": n_distinct,
        "nominal_flop": positions * (cnn + lstm),
        "executed_flop": n_distinct * cnn
        + positions * (lstm - layer0_in)
        + (n_distinct if table else positions) * layer0_in,
        "floor_flop": floor,
    }


def sum_costs(costs: list[dict[str, float]]) -> dict[str, float]:
    """The key-by-key sum of several batches' :func:`batch_cost`."""
    return {key: sum(c[key] for c in costs) for key in costs[0]}
