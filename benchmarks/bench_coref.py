"""Long-document benchmark of the coreference model (Lee et al. 2017) at ``paper`` sizes on CPU.

Usage::

    python benchmarks/bench_coref.py [--tokens 2000] [--sentence 25] [--threads 2] [--no-elmo]
        [--block 128]

A synthetic document of ``--tokens`` tokens (sentences of ``--sentence`` tokens, random words and
characters, two speakers, 40 gold clusters) goes through the model with random weights and the
``paper`` preset's sizes: fixed 300-d + 50-d word vectors (random stand-ins for GloVe 840B and
Turian), char CNN 3/4/5 × 50, biLSTM 200, FFNNs 2 × 150, features 20, λ = 0.4, width ≤ 10,
K = 250, and (unless ``--no-elmo``) 3 × 1024-d ELMo-sized layers at the input. Each phase runs in
its own process, so its peak RSS (``ru_maxrss``) is its own:

* ``inference``: ``model.eval()`` + ``torch.no_grad()``, the whole document (as at test time);
* ``train step``: forward + backward + Adam step on the **whole** document (the worst case:
  training normally cuts documents to 50 sentences).

Printed per phase: seconds (median of 3 after a warm-up), peak RSS, candidate spans, kept spans
k = ⌊0.4 T⌋, K, and the bytes of the largest pair tensor (block × K × span width) next to what a
``T × T`` float tensor and an unblocked ``k × K × pair width`` tensor would take. The figures
depend on the machine and its load; run on an otherwise idle one.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``tasks`` importable
    sys.path.insert(0, str(REPO))

from tasks.coref.model import CorefBatch, SpanRankingCoref  # noqa: E402
from tasks.coref.task import TASK  # noqa: E402
from tasks.features.inject import Injector  # noqa: E402
from tasks.representations import Layers, build_representation  # noqa: E402

VOCAB, CHARS, GENRES, ELMO_DIM, ELMO_LAYERS = 20_000, 100, 8, 1024, 3


class _ElmoSized:
    """A frozen stand-in with ELMo's layer count and width (the batch carries random layers)."""

    name, output_dim, num_layers, trainable = "elmo-sized", ELMO_DIM, ELMO_LAYERS, False
    state_policy, context_free_layers = "reset", 0

    def fingerprint(self) -> str:
        return "elmo-sized"


def _document(tokens: int, sentence: int, elmo: bool) -> CorefBatch:
    g = torch.Generator().manual_seed(0)
    lengths = [sentence] * (tokens // sentence) + ([tokens % sentence] if tokens % sentence else [])
    t = max(lengths)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]  # (n, t)
    words = torch.randint(2, VOCAB, mask.shape, generator=g) * mask
    chars = torch.randint(1, CHARS, (*mask.shape, 12), generator=g) * mask[:, :, None]
    speakers = (torch.arange(len(lengths))[:, None] % 2 + 1).expand_as(mask) * mask
    starts = torch.randperm(tokens - 3, generator=g)[:200].sort().values
    gold = torch.stack([starts, starts + torch.randint(0, 3, (200,), generator=g)], 1)
    clusters = torch.arange(200) % 40 + 1
    layers = Layers.empty(lengths)  # the baseline's: no layers
    if elmo:
        layers = Layers(torch.randn(ELMO_LAYERS, len(lengths), t, ELMO_DIM, generator=g), mask)
    return CorefBatch(
        words, chars, mask, speakers, torch.tensor(4), gold[:, 0], gold[:, 1], clusters, layers
    )


def _model(elmo: bool, block: int, whole: bool) -> SpanRankingCoref:
    paper = TASK.configure("paper", ())
    config = dataclasses.replace(
        paper,
        word_vectors="random:300",
        turian_vectors="random:50",
        antecedent_block=block,
        max_training_sentences=10**6 if whole else paper.max_training_sentences,
    )
    torch.manual_seed(0)
    rep = _ElmoSized() if elmo else build_representation("none")
    injector = Injector(rep, frozenset({"input"}) if elmo else frozenset(), dropout=0.5)  # type: ignore[arg-type]
    tables = [torch.randn(VOCAB, 300), torch.randn(VOCAB, 50)]
    return SpanRankingCoref(config, tables, CHARS + 2, GENRES, injector)


def _phase(args: argparse.Namespace) -> dict[str, object]:
    torch.set_num_threads(args.threads)
    batch = _document(args.tokens, args.sentence, not args.no_elmo)
    model = _model(not args.no_elmo, args.block, whole=True)
    times = []
    if args.phase == "inference":
        model.eval()
        with torch.no_grad():
            for _ in range(4):
                start = time.perf_counter()
                out = model(batch)
                times.append(time.perf_counter() - start)
    else:
        model.train()
        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], 1e-3)
        for _ in range(4):
            start = time.perf_counter()
            out = model(batch)
            assert out.loss is not None
            optimizer.zero_grad()
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
            times.append(time.perf_counter() - start)
    k = len(out.starts)
    big_k = min(model.config.max_antecedents, max(k - 1, 0))
    block = min(args.block, k)
    return {
        "phase": args.phase,
        "seconds": statistics.median(times[1:]),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "tokens": args.tokens,
        "candidates": out.candidates,
        "kept": k,
        "antecedents": big_k,
        "largest_pair_tensor_mib": block * big_k * model.span_dim * 4 / 2**20,
        "unblocked_pair_tensor_mib": k * big_k * model.pair_dim * 4 / 2**20,
        "t_by_t_mib": args.tokens**2 * 4 / 2**20,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--sentence", type=int, default=25, help="tokens per sentence")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--block", type=int, default=TASK.configure("paper", ()).antecedent_block)
    parser.add_argument("--no-elmo", action="store_true", help="without the ELMo-sized input")
    parser.add_argument("--phase", choices=("inference", "train"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        print(json.dumps(_phase(args)))
        return 0
    print(
        f"coreference, paper sizes, random weights, {args.tokens}-token document, "
        f"{args.threads} thread(s), ELMo-sized input: {not args.no_elmo}, block {args.block}"
    )
    for phase in ("inference", "train"):
        command = [sys.executable, __file__, "--phase", phase, *(argv or sys.argv[1:])]
        result = json.loads(
            subprocess.run(command, check=True, capture_output=True, text=True).stdout
        )
        print(
            f"{phase:>9}: {result['seconds']:.2f} s, peak RSS {result['peak_rss_mib']:.0f} MiB; "
            f"{result['candidates']} candidate spans, k = {result['kept']} kept, "
            f"K = {result['antecedents']}; largest pair tensor "
            f"{result['largest_pair_tensor_mib']:.0f} MiB (unblocked k × K × pair width: "
            f"{result['unblocked_pair_tensor_mib']:.0f} MiB; a T × T float tensor: "
            f"{result['t_by_t_mib']:.0f} MiB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
