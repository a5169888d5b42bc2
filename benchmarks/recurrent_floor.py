"""How much of a stored run's training epoch its recurrent layers, and its matrix products,
alone cost.

Usage::

    python benchmarks/recurrent_floor.py --spec results/peer/project-runs/squad/<id>/spec.json
        [--batches N] [--repeats 3] [--threads 1] [--device cpu] [--precision fp32]

The run is set up from its spec exactly as ``python -m experiments run --spec`` sets it up
(:func:`experiments.run.setup.setup_data`, :func:`experiments.run.setup.set_up`; a spec that names a
plug-in representation is refused), then one epoch of its own batch plan (seeded as epoch 0;
the first ``--batches`` batches) runs through the loop's training step (``experiments.run.runner``:
forward, loss, backward, clipping, optimizer step) after one untimed warm-up batch. Every call
of a ``torch.nn`` RNN module (``nn.GRU``, ``nn.LSTM``) in that epoch is recorded (its input, a
packed sequence or a tensor, copied; the calls go through :func:`tasks.nn.layers.run_rnn`);
then the same calls are replayed alone, forward and backward against a fixed output gradient,
with the run's own modules and weights. Printed, as medians over ``--repeats`` rounds of
process CPU seconds: the epoch, the recurrent replay and its share of the epoch, and the
building of the batches (with a live biLM, as the ``carry`` rows run it, its forward pass).

Side by side in the same rounds, the epoch and the replay run once more with torch's own packed
RNN loop (:func:`tasks.nn.packed_rnn.torch_loop`) instead of the step loop the tasks train
with: the two compute the same numbers, and the ratio is what the step loop's linear-time
backward saves.

Then one more pass over the same batches runs under ``torch.profiler`` to record every matrix
product the epoch computes (``aten::mm``, ``addmm``, ``bmm``, ``baddbmm``; forward and backward,
with their shapes), and those products are replayed alone on random operands of the same shapes
(in the ``--precision``'s dtype):
their CPU seconds, share of the epoch, FLOPs and GFLOP/s. A model whose recurrence is its own
loop of cells (SRL's alternating LSTM) has no ``nn`` RNN call; its products are its floor.

Each replay is the model's own work at the epoch's exact shapes: another implementation that
computes the same layers (and the same frozen biLM) on the same kernels needs at least as long
for them, and one that cuts its products into smaller ones (a per-step input projection) no
less, so a CPU time target beside it is read against this floor (docs/peer.md, "Speed").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(REPO))

from benchmarks.common import machine_info  # noqa: E402
from bilm.devices import autocast, autocast_dtype  # noqa: E402
from experiments.run import runner  # noqa: E402
from experiments.run.resolve import resolve  # noqa: E402
from experiments.run.setup import Run, RunOptions, seed_everything, set_up, setup_data  # noqa: E402
from experiments.run.spec import RunSpec  # noqa: E402
from tasks.core import batch_plan  # noqa: E402
from tasks.nn import layers, packed_rnn  # noqa: E402

#: One recorded call: the module and a detached copy of its input.
Call = tuple[nn.RNNBase, Any]

#: The matrix products :func:`record_products` counts, and the call that replays each
#: (composites such as ``aten::matmul`` and ``aten::linear`` reach one of them).
PRODUCTS: dict[str, Any] = {
    "aten::mm": torch.mm,
    "aten::addmm": torch.addmm,
    "aten::bmm": torch.bmm,
    "aten::baddbmm": torch.baddbmm,
}
#: One recorded product shape: the op and its operands' shapes (``addmm``: bias, left, right).
Product = tuple[str, tuple[tuple[int, ...], ...]]


def _copy(value: Any) -> Any:
    """A detached copy of an RNN input (a packed sequence or a tensor)."""
    if isinstance(value, PackedSequence):
        return PackedSequence(
            value.data.detach().clone(),
            value.batch_sizes,
            value.sorted_indices,
            value.unsorted_indices,
        )
    return value.detach().clone()


def _with_grad(value: Any) -> Any:
    """``value`` whose data requires a gradient, as it does inside the model."""
    if isinstance(value, PackedSequence):
        data = value.data.clone().requires_grad_(True)
        return PackedSequence(data, value.batch_sizes, value.sorted_indices, value.unsorted_indices)
    return value.clone().requires_grad_(True)


def record_epoch(run: Run, plan: Sequence[Sequence[int]]) -> tuple[float, float, list[Call]]:
    """Train ``plan`` through the loop's step: its process CPU seconds, those of building the
    batches (with a live biLM, its forward pass) and every RNN call."""
    calls: list[Call] = []
    output = layers._output

    def recording(rnn: Any, x: Any) -> Any:
        if isinstance(rnn, nn.RNNBase):
            calls.append((rnn, _copy(x)))
        return output(rnn, x)

    layers._output = recording  # every task RNN call passes through run_rnn
    try:
        cpu = time.process_time()
        collate = _train(run, plan)
        cpu = time.process_time() - cpu
    finally:
        layers._output = output
    return cpu, collate, calls


def _train(run: Run, plan: Sequence[Sequence[int]]) -> float:
    """Train ``plan`` through the loop's step; the process CPU seconds of building its batches."""
    state = runner.LoopState(lr=run.train_config.optimizer.lr)
    train = run.splits["train"]
    run.model.train()
    collate = 0.0
    for indices in plan:
        started = time.process_time()
        batch = run.recipe.collate([train[i] for i in indices], run.represent)
        collate += time.process_time() - started
        runner._train_batch(run, state, batch)
    return collate


def replay(calls: Sequence[Call], precision: str = "fp32") -> float:
    """Process CPU seconds of every call's forward and backward, alone (the forward under the
    run's precision, as in its training step)."""
    generator = torch.Generator().manual_seed(0)
    total = 0.0
    for module, value in calls:
        inputs = _with_grad(value)
        started = time.process_time()
        with autocast(inputs.data.device, precision):
            output = layers.run_rnn(module, inputs)
        data = output.data if isinstance(output, PackedSequence) else output
        grad = torch.randn(data.shape, generator=generator, dtype=data.dtype)
        data.backward(grad)
        total += time.process_time() - started
        module.zero_grad(set_to_none=True)
    return total


def record_products(run: Run, plan: Sequence[Sequence[int]]) -> dict[Product, int]:
    """Train ``plan`` once more under ``torch.profiler``: how often each matrix product shape
    ran, forward and backward."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _train(run, plan)
    counts: dict[Product, int] = {}
    for event in prof.key_averages(group_by_input_shape=True):
        if event.key in PRODUCTS:
            shapes = tuple(tuple(int(d) for d in shape) for shape in event.input_shapes[:3])
            key = (event.key, shapes)
            counts[key] = counts.get(key, 0) + event.count
    return counts


def product_flops(product: Product) -> int:
    """Floating-point operations of one product (2 per multiply-add)."""
    op, shapes = product
    if op == "aten::mm":
        (m, k), (_, n) = shapes[0], shapes[1]
        return 2 * m * k * n
    if op == "aten::addmm":
        (m, k), (_, n) = shapes[1], shapes[2]
        return 2 * m * k * n
    if op in ("aten::bmm", "aten::baddbmm"):
        left, right = (shapes[0], shapes[1]) if op == "aten::bmm" else (shapes[1], shapes[2])
        return 2 * left[0] * left[1] * left[2] * right[2]
    raise ValueError(f"not a matrix product: {op}")


def replay_products(counts: dict[Product, int], dtype: torch.dtype = torch.float32) -> float:
    """Process CPU seconds of every recorded product, alone, on random operands of ``dtype``
    (a bf16 run's: bf16, as autocast runs its products; its few float32 ones are counted as
    bf16 too)."""
    generator = torch.Generator().manual_seed(0)
    total = 0.0
    for (op, shapes), count in sorted(counts.items()):
        operands = [torch.randn(shape, generator=generator).to(dtype) for shape in shapes]
        call = PRODUCTS[op]
        call(*operands)  # untimed: the kernel's first call
        started = time.process_time()
        for _ in range(count):
            call(*operands)
        total += time.process_time() - started
    return total


def measure(
    spec: RunSpec,
    batches: int | None,
    repeats: int,
    device: str,
    work: Path,
    precision: str = "fp32",
) -> dict[str, Any]:
    """Medians over ``repeats`` rounds: the epoch's CPU seconds and its RNN calls' alone, each
    also with torch's own packed RNN loop."""
    if spec.plugin is not None:
        raise SystemExit(f"error: {spec.task}: a plug-in representation is not set up here")
    resolved = resolve(spec)
    seed_everything(spec.seed)
    data = setup_data(resolved, max_skipped=1.0)
    options = RunOptions(work_root=work, device=device, precision=precision, progress=False)
    run = set_up(resolved, options, data)
    train = run.splits["train"]
    plan = batch_plan(
        [run.recipe.size(e) for e in train], run.train_config, runner.epoch_seed(spec.seed, 0)
    )
    plan = plan[:batches] if batches else plan
    record_epoch(run, plan[:1])  # warm-up: allocations, lazy set-up
    epochs, batching, alone, products = [], [], [], []
    torch_epochs, torch_alone = [], []
    for _ in range(repeats):
        cpu, collate, calls = record_epoch(run, plan)
        epochs.append(cpu)
        batching.append(collate)
        alone.append(replay(calls, precision))
        with packed_rnn.torch_loop():
            torch_epochs.append(record_epoch(run, plan)[0])
            torch_alone.append(replay(calls, precision))
    counts = record_products(run, plan)
    for _ in range(repeats):
        products.append(replay_products(counts, autocast_dtype(precision) or torch.float32))
    return {
        "batches": len(plan),
        "rnn_calls": len(calls),
        "epoch_cpu_s": statistics.median(epochs),
        "batch_cpu_s": statistics.median(batching),
        "recurrent_cpu_s": statistics.median(alone),
        "torch_loop_epoch_cpu_s": statistics.median(torch_epochs),
        "torch_loop_recurrent_cpu_s": statistics.median(torch_alone),
        "products": sum(counts.values()),
        "product_gflop": sum(product_flops(p) * n for p, n in counts.items()) / 1e9,
        "product_cpu_s": statistics.median(products),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spec", type=Path, required=True, help="a run's spec.json")
    parser.add_argument("--batches", type=int, default=None, help="first N batches (all)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (median)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (peer runs: 1)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    spec = RunSpec.from_dict(json.loads(args.spec.read_text()))
    info = machine_info()
    print(
        f"{spec.task} {spec.preset} {spec.representation} ({args.spec}); {info['cpu']}, "
        f"{args.threads} thread(s), torch {torch.__version__}, {args.precision}"
    )
    with tempfile.TemporaryDirectory() as work:
        result = measure(spec, args.batches, args.repeats, args.device, Path(work), args.precision)
    share = result["recurrent_cpu_s"] / result["epoch_cpu_s"]
    print(
        f"one epoch: {result['batches']} batches, {result['epoch_cpu_s']:.2f} CPU s "
        f"(median of {args.repeats})"
    )
    print(
        f"its {result['rnn_calls']} RNN calls alone, forward + backward: "
        f"{result['recurrent_cpu_s']:.2f} CPU s = {share:.1%} of the epoch"
    )
    epoch, torch_epoch = result["epoch_cpu_s"], result["torch_loop_epoch_cpu_s"]
    rnn, torch_rnn = result["recurrent_cpu_s"], result["torch_loop_recurrent_cpu_s"]
    print(
        f"with torch's own packed RNN loop, side by side: the epoch {torch_epoch:.2f} CPU s "
        f"(the step loop's {epoch / torch_epoch:.2f}x), the RNN calls {torch_rnn:.2f} CPU s "
        f"(the step loop's {rnn / torch_rnn:.2f}x)"
    )
    batch = result["batch_cpu_s"]
    print(
        f"building its batches (a live biLM's forward included): {batch:.2f} CPU s; "
        f"with the RNN calls {result['recurrent_cpu_s'] + batch:.2f} CPU s = "
        f"{(result['recurrent_cpu_s'] + batch) / result['epoch_cpu_s']:.1%} of the epoch"
    )
    gemm = result["product_cpu_s"]
    print(
        f"its {result['products']} matrix products (forward + backward) alone: {gemm:.2f} CPU s = "
        f"{gemm / result['epoch_cpu_s']:.1%} of the epoch; {result['product_gflop']:.1f} GFLOP, "
        f"{result['product_gflop'] / gemm:.1f} GFLOP/s"
    )
    return result


if __name__ == "__main__":
    main()
