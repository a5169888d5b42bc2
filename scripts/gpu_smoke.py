"""GPU check of the library and the harness: biLM parity and speed, then every task on the GPU.

    nox -s gpu_smoke                      # = python scripts/gpu_smoke.py
    python scripts/gpu_smoke.py --tasks squad,ner --configs paper --precision bf16
    python scripts/gpu_smoke.py --device cpu --examples 40 --configs mini   # the same code on CPU

1. **biLM** (published architecture, ``BiLMOptions()`` defaults, random weights seed 0, so nothing
   is downloaded): the largest deviation of the device's fp32 (and bf16 autocast) outputs from
   the CPU's fp32 outputs on DEMO sentences, and the device's tokens/s on 64 × 20 and 512 × 20
   batches (medians, synchronised) in fp32 and bf16 (``BiLM.to_precision``: bf16 products,
   float32 state), each without and with CUDA graphs (``BiLM.use_cuda_graphs``), with each
   one's deviation from fp32 without graphs and PASS/MISS for the GPU targets
   of docs/performance.md (``benchmarks/bench_precision.py``, :func:`gpu_figures`).
2. **Every task** (``--tasks``, default all registered) with each preset of ``--configs``: one
   short run (``--examples`` per split, ``--epochs``) through the same runner as ``python -m
   experiments run``, on the DEMO set. ``mini`` uses the shipped small biLM through the feature
   cache; ``paper`` a full-size random biLM (``bilm-random``) live on the device under autocast
   at the task's paper sites, and random 300-d word vectors (GloVe 840B is not needed to check
   the device path). Prints status, wall time, peak device memory and the dev metric (a smoke
   number: few examples, one epoch, DEMO data).
3. ``python -m bilm embed`` with the shipped small biLM on the device and on the CPU: the largest
   difference between the two HDF5 files.

Exit status 0 when everything ran, 1 when a check failed (each failure is printed with its
error) or when ``--device cuda`` is asked for and CUDA is not available.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.bench_precision import demo_sentences, gpu_figures, print_gpu  # noqa: E402
from bilm import BiLM, BiLMOptions, batch_to_ids, init_weights  # noqa: E402
from bilm.devices import autocast, exact_fp32, resolve_device  # noqa: E402
from experiments.run.runner import RunOptions, train  # noqa: E402
from experiments.run.spec import RunSpec  # noqa: E402
from tasks.registry import TASKS, get_task  # noqa: E402


def check_bilm(device: torch.device, repeats: int) -> dict[str, Any]:
    """Parity of the full-size biLM on ``device`` with the CPU, and its speed there."""
    options = BiLMOptions()
    cpu_model = init_weights(BiLM(options), seed=0).eval()
    sentences = demo_sentences()
    sample = sentences[:16]
    ids = batch_to_ids(sample)  # (16, T, 50)
    with torch.inference_mode():
        expected = cpu_model(ids).layers  # (3, 16, T, 1024)
        model = cpu_model.to(device)
        got = model(ids.to(device)).layers.float().cpu()  # torch's defaults (TF32 convolutions)
        with autocast(device, "bf16"):
            got_bf16 = model(ids.to(device)).layers.float().cpu()
    with torch.inference_mode(), exact_fp32():  # what --precision fp32 runs (TF32 off)
        got_exact = model(ids.to(device)).layers.float().cpu()
    report: dict[str, Any] = {
        "max_abs_dev_fp32_no_tf32": float((got_exact - expected).abs().max()),
        "sentences": len(sample),
        "tokens": sum(map(len, sample)),
        "max_abs_dev_fp32": float((got - expected).abs().max()),
        "max_abs_dev_bf16": float((got_bf16 - expected).abs().max()),
        "max_abs_output": float(expected.abs().max()),
    }
    # fp32 / bf16 (to_precision), CUDA graphs off / on, 64 x 20 and 512 x 20 (TF32 off)
    figures = gpu_figures(model, device, (64, 512), repeats)
    report["speed"] = figures
    report["tokens_per_s"] = {
        f"{shape} {name}": f["tokens_per_s"]
        for shape, row in figures.items()
        for name, f in row.items()
    }
    return report


def check_embed(device: torch.device, root: Path, sentences: int = 300) -> dict[str, Any]:
    """``python -m bilm embed`` (shipped small biLM) on ``device`` and on the CPU: same vectors?"""
    import h5py

    from bilm.__main__ import main as bilm_main

    text = root / "embed.txt"
    text.write_text("\n".join(" ".join(s) for s in demo_sentences()[:sentences]) + "\n")
    seconds: dict[str, float] = {}
    outputs: dict[str, Path] = {}
    for where in (str(device), "cpu"):
        started = time.perf_counter()
        outputs[where] = root / f"embed-{where.replace(':', '_')}.hdf5"
        command = ["embed", "--input", str(text), "--output", str(outputs[where])]
        code = bilm_main([*command, "--device", where, "--quiet"])
        if code not in (0, None):
            raise RuntimeError(f"bilm embed --device {where} exited with {code}")
        seconds[where] = time.perf_counter() - started
    deviation = 0.0
    with h5py.File(outputs[str(device)]) as a, h5py.File(outputs["cpu"]) as b:
        for key in range(sentences):
            deviation = max(deviation, float(abs(a[str(key)][()] - b[str(key)][()]).max()))
    return {"sentences": sentences, "seconds": seconds, "max_abs_dev": deviation}


def task_spec(task_name: str, preset: str, examples: int, epochs: int, options: Path) -> RunSpec:
    """The run of one task: DEMO data, ``examples`` per split, ``epochs``, the paper's sites."""
    task = get_task(task_name)
    overrides = [f"train.epochs={epochs}"]
    # random vectors of the preset's widths stand in for the files it must be given (GloVe
    # 840B, Turian: the task's Synthetic.stand_ins), so the device path runs anywhere
    if task.synthetic is not None:
        overrides += task.synthetic.stand_ins.get(preset, ())
    if preset == "paper":
        representation, config = "bilm-random", {"options": str(options)}
    else:
        representation, config = "elmo", {}
    return RunSpec(
        task=task.name,
        task_version=task.version,
        representation=representation,
        representation_config=config,
        sites=tuple(sorted(task.sites_for(preset))),  # type: ignore[arg-type]
        mix=task.default_mix,
        preset=preset,
        overrides=tuple(overrides),
        data="demo",
        limit=examples,
    )


def check_task(
    spec: RunSpec, device: str, precision: str, root: Path, progress: bool
) -> dict[str, Any]:
    """One short run; status, time, peak device memory and the dev metric."""
    task = get_task(spec.task)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    try:
        outcome = train(
            spec,
            RunOptions(
                work_root=root / "work",
                # mini: frozen features through the feature cache; paper: the biLM live on the
                # device under autocast, as with a task-tuned or trainable biLM
                cache_dir=root / "cache" if spec.preset != "paper" else None,
                device=device,
                precision=precision,
                progress=progress,
                threads=None,
            ),
        )
    except Exception as error:  # a failed task is reported; the others still run
        return {
            "status": "FAIL",
            "error": f"{type(error).__name__}: {error}",
            "traceback": traceback.format_exc(),
            "wall_s": time.perf_counter() - started,
        }
    key = f"dev_{task.metric.key}"
    return {
        "status": "ok",
        "device": outcome.device,
        "counts": outcome.counts,
        "wall_s": time.perf_counter() - started,
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
        "metric": key,
        "value": outcome.metrics.get(key),
        "skipped_steps": outcome.skipped_steps,
    }


def _tasks(text: str) -> list[str]:
    names = list(TASKS) if text == "all" else [t for t in text.split(",") if t]
    unknown = [t for t in names if t not in TASKS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown task(s) {unknown}; known: {', '.join(TASKS)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N (or cpu: same code)")
    parser.add_argument("--precision", default="bf16", choices=("fp32", "bf16", "fp16"))
    parser.add_argument("--tasks", type=_tasks, default=list(TASKS), help="all or a,b,c")
    parser.add_argument("--configs", default="mini,paper", help="presets to run, comma-separated")
    parser.add_argument("--examples", type=int, default=400, help="examples per split")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="timed biLM calls per figure")
    parser.add_argument("--no-bilm", action="store_true", help="skip the biLM parity and speed")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--progress", action="store_true", help="tqdm bars per run")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            "gpu_smoke: CUDA is not available (no GPU, or a CPU build of torch): nothing was "
            "run. Install the CUDA build of torch 2.13.0 on a GPU machine (see README, Set-up), "
            "or pass --device cpu to run the same checks on the CPU.",
            file=sys.stderr,
        )
        return 1
    device = resolve_device(args.device)
    configs = [c for c in args.configs.split(",") if c]
    report: dict[str, Any] = {"torch": torch.__version__, "device": str(device)}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        report["gpu"] = f"{props.name}, {props.total_memory / 2**30:.0f} GiB"
    print(f"gpu_smoke: torch {torch.__version__}, device {device} {report.get('gpu', '')}")
    failures = 0
    if not args.no_bilm:
        print("\n[biLM: full-size architecture, random weights (seed 0)]", flush=True)
        try:
            bilm_report = check_bilm(device, args.repeats)
        except Exception as error:
            failures += 1
            bilm_report = {"status": "FAIL", "error": f"{type(error).__name__}: {error}"}
            traceback.print_exc()
        else:
            print(
                f"  max |{device.type} fp32 - cpu fp32| over 3 layers, {bilm_report['sentences']} "
                f"DEMO sentences ({bilm_report['tokens']} tokens): "
                f"{bilm_report['max_abs_dev_fp32']:.2e} (TF32 off: "
                f"{bilm_report['max_abs_dev_fp32_no_tf32']:.2e}); bf16 autocast: "
                f"{bilm_report['max_abs_dev_bf16']:.2e} (max |output| "
                f"{bilm_report['max_abs_output']:.2f})"
            )
            bilm_report["targets"] = print_gpu(bilm_report["speed"], args.repeats)
        report["bilm"] = bilm_report
    print(f"\n[python -m bilm embed: shipped small biLM, {device} vs cpu]", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            embed = check_embed(device, Path(tmp))
        except Exception as error:
            failures += 1
            embed = {"status": "FAIL", "error": f"{type(error).__name__}: {error}"}
            traceback.print_exc()
        else:
            times = ", ".join(f"{k} {v:.1f} s" for k, v in embed["seconds"].items())
            print(
                f"  {embed['sentences']} DEMO sentences: max |{device.type} - cpu| "
                f"{embed['max_abs_dev']:.2e}; wall {times}"
            )
    report["embed"] = embed
    print(
        f"\n[tasks: {args.precision}, {args.examples} DEMO examples per split, "
        f"{args.epochs} epoch(s); the metric is a smoke number]",
        flush=True,
    )
    print(f"  {'task':<6} {'preset':<6} {'status':<6} {'wall s':>7} {'peak GiB':>9}  dev metric")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        options = root / "options.json"
        BiLMOptions().to_json(options)
        for preset in configs:
            for name in args.tasks:
                spec = task_spec(name, preset, args.examples, args.epochs, options)
                result = check_task(spec, str(device), args.precision, root, args.progress)
                results[f"{name}/{preset}"] = result
                peak = result.get("peak_gib")
                peak_text = "-" if peak is None else f"{peak:.2f}"
                value = result.get("value")
                metric = "" if value is None else f"{result['metric']} {100 * value:.1f}"
                print(
                    f"  {name:<6} {preset:<6} {result['status']:<6} {result['wall_s']:>7.1f} "
                    f"{peak_text:>9}  {metric}",
                    flush=True,
                )
                if result["status"] != "ok":
                    failures += 1
                    print("    " + result["traceback"].rstrip().replace("\n", "\n    "))
    report["tasks"] = results
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    print(f"\ngpu_smoke: {'all checks ran' if not failures else f'{failures} check(s) FAILED'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
