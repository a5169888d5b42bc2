"""Our biLM beside the allennlp-style computation of the same forward, same weights, same run.

``benchmarks/allennlp_step.py`` computes allennlp 2.10.1's whole ``_ElmoBiLm`` forward in plain
torch (the char CNN on every padded position, per-step ``nn.Linear`` LSTM cells), built from our
model's weights, so no allennlp install is needed. The section prints the max deviation
(≤ 1e-5), then alternating timed pairs (order swapped every pair; medians and the median of the
per-pair ratios) on the 64 × 20 batch (``--pairs``) and on the first ``--compare-natural``
corpus sentences (``--natural-pairs`` passes), each side batching natural text as its tool
does: ours as ``bilm embed`` (length-sorted token-budget batches, token cache), allennlp-style
as its ``embed_file`` (file order, 64 a batch).

Run: ``python benchmarks/bench_bilm.py --quick`` (``--no-allennlp`` skips it).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from benchmarks.allennlp_step import AllennlpStyleBiLM
from benchmarks.bilm_speed.measure import (
    BATCH,
    LENGTH,
    alternate,
    fmt_bytes,
    forward,
    pair_ratio,
    verdict,
)
from benchmarks.bilm_speed.targets import TARGET_MAX_DIFF
from benchmarks.common import peak_rss_bytes
from bilm import BiLM, batch_to_ids
from bilm.embed import TOKEN_CACHE_WORDS, TOKENS_PER_ROW, Sentence, plan_batches


def allennlp_comparison(
    model: BiLM,
    ids: torch.Tensor,
    tokens: int,
    corpus: list[list[str]],
    args: argparse.Namespace,
    report: dict[str, Any],
) -> dict[str, float]:
    """The ``[allennlp-style computation]`` section: deviation, 64 × 20, natural text.

    Args:
        model: the loaded biLM (fp32).
        ids: the 64 × 20 batch's character ids.
        tokens: its real tokens.
        corpus: the corpus; the first ``args.compare_natural`` sentences are the natural text.
        args: the command line (``pairs``, ``compare_natural``, ``natural_pairs``).
        report: the JSON report; ``allennlp_style`` is added.

    Returns:
        ``max_abs_diff``, ``ratio_64x20`` and ``ratio_natural`` (NaN when not timed).
    """
    start = time.perf_counter()
    reference = AllennlpStyleBiLM.from_bilm(model).eval()
    build_s = time.perf_counter() - start

    def theirs(batch_ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return reference(batch_ids)

    dev = float((forward(model, ids) - theirs(ids)).abs().max())  # also warms both up
    ours_s, theirs_s = alternate(lambda: forward(model, ids), lambda: theirs(ids), args.pairs)
    ratio, ratio_of_medians = pair_ratio(ours_s, theirs_s)
    print(
        "\n[allennlp-style computation (benchmarks/allennlp_step.py): the whole _ElmoBiLm "
        "forward, char CNN on every padded position, per-step nn.Linear LSTM cells; same "
        f"weights, same process; built in {build_s:.1f} s]"
    )
    print(
        f"  max |ours - allennlp-style| over all layers, {BATCH} x {LENGTH}: {dev:.2e} "
        f"{verdict(dev <= TARGET_MAX_DIFF)} (<= 1e-5)"
    )
    print(
        f"  {BATCH} x {LENGTH}, {args.pairs} alternating pairs: ours median "
        f"{statistics.median(ours_s):.3f} s ({tokens / statistics.median(ours_s):,.0f} tokens/s), "
        f"allennlp-style {statistics.median(theirs_s):.3f} s "
        f"({tokens / statistics.median(theirs_s):,.0f} tokens/s)"
    )
    print(
        f"  ours/allennlp-style: x{ratio:.2f} (median of pair ratios; ratio of medians "
        f"x{ratio_of_medians:.2f})"
    )
    result = {"max_abs_diff": dev, "ratio_64x20": ratio, "ratio_natural": float("nan")}
    report["allennlp_style"] = {
        "max_abs_diff": dev,
        "batch_64x20": {
            "ours_s": ours_s,
            "allennlp_style_s": theirs_s,
            "ratio": ratio,
            "ratio_of_medians": ratio_of_medians,
        },
    }

    sentences = corpus[: args.compare_natural]
    if not sentences or args.natural_pairs < 1:
        return result
    n_tokens = sum(len(s) for s in sentences)
    budget = BATCH * TOKENS_PER_ROW
    chunk = [Sentence(i, s) for i, s in enumerate(sentences)]

    def ours_pass() -> None:  # as `bilm embed` runs: length-sorted budget batches, token cache
        model.set_token_cache(TOKEN_CACHE_WORDS)  # empty at the start of every pass
        for batch in plan_batches(chunk, BATCH, True, budget):
            forward(model, batch_to_ids([x.tokens for x in batch]))
        model.set_token_cache(0)

    def theirs_pass() -> None:  # as allennlp's ElmoEmbedder.embed_file: file order, 64 a batch
        for i in range(0, len(sentences), BATCH):
            theirs(batch_to_ids(sentences[i : i + BATCH]))

    n_ours, n_theirs = alternate(ours_pass, theirs_pass, args.natural_pairs)
    nat_ratio, nat_ratio_of_medians = pair_ratio(n_ours, n_theirs)
    print(
        f"  natural text: first {len(sentences):,} corpus sentences, {n_tokens:,} tokens, "
        f"{args.natural_pairs} alternating passes (char ids included): ours as `bilm embed` "
        f"(length-sorted batches within {budget:,} positions, token cache), allennlp-style as "
        f"its embed_file (file order, {BATCH} a batch)"
    )
    print(
        f"  ours median {statistics.median(n_ours):.2f} s "
        f"({n_tokens / statistics.median(n_ours):,.0f} tokens/s), allennlp-style "
        f"{statistics.median(n_theirs):.2f} s ({n_tokens / statistics.median(n_theirs):,.0f} "
        f"tokens/s): x{nat_ratio:.2f} (ratio of medians x{nat_ratio_of_medians:.2f})"
    )
    print(f"  peak RSS after this stage {fmt_bytes(peak_rss_bytes())}")
    result["ratio_natural"] = nat_ratio
    report["allennlp_style"]["natural"] = {
        "sentences": len(sentences),
        "tokens": n_tokens,
        "ours_s": n_ours,
        "allennlp_style_s": n_theirs,
        "ratio": nat_ratio,
        "ratio_of_medians": nat_ratio_of_medians,
    }
    return result
