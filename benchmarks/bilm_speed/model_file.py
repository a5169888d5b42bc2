"""The biLM the speed benchmark measures: random weights in the official layout, and their load.

The full-size architecture (``BiLMOptions()``: the published 2 × 4096/512 biLSTM, 2,048-filter
char CNN, 2 highway layers; Peters et al. 2018 §3.4) with random weights
(``init_weights(seed)``) is written in the official HDF5 layout by a *separate* process, so that
the measuring process's peak RSS is only its own. The file is cached under
``~/.cache/elmo-bench/bench/`` (``$ELMO_BENCH_CACHE`` overrides the root). ``--quick`` uses
:data:`QUICK_OPTIONS` instead. The ``[load]`` stage times :func:`bilm.load_official` on it.

Run: ``python benchmarks/bench_bilm.py --quick`` (writes the small model once, then reuses it);
the writer child is ``python benchmarks/bench_bilm.py --write-model DIR [--quick] --seed N``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bilm
from benchmarks.bilm_speed.measure import ENTRY, fmt_bytes, shown
from benchmarks.common import peak_rss_bytes
from bilm import BiLM, BiLMOptions, CharCNNOptions, LSTMOptions

CACHE_ROOT = Path(os.environ.get("ELMO_BENCH_CACHE", "~/.cache/elmo-bench")).expanduser()
CACHE_FORMAT = "v1"

#: ``--quick``: a small model with every piece of the full one (smoke runs, not speed).
QUICK_OPTIONS = BiLMOptions(
    lstm=LSTMOptions(dim=256, projection_dim=64),
    char_cnn=CharCNNOptions(filters=((1, 16), (2, 16), (3, 32), (4, 64)), n_highway=1),
)


def model_options(quick: bool) -> BiLMOptions:
    """The benchmarked architecture: the published one, or :data:`QUICK_OPTIONS`."""
    return QUICK_OPTIONS if quick else BiLMOptions()


def model_dir(seed: int, quick: bool = False) -> Path:
    """The cache folder of the model with weights ``seed`` (full size or ``quick``)."""
    name = "quick-2x256_64_128cnn_1xhighway" if quick else "2x4096_512_2048cnn_2xhighway"
    return CACHE_ROOT / "bench" / f"elmo-{name}-seed{seed}-{CACHE_FORMAT}"


def write_model(out_dir: Path, seed: int, quick: bool = False) -> None:
    """Body of the writer subprocess: random weights in the official layout.

    Args:
        out_dir: where ``options.json``, ``weights.hdf5`` and the ``complete.json`` marker go.
        seed: the weights' seed.
        quick: the small model instead of the full-size one.
    """
    start = time.perf_counter()
    model = BiLM(model_options(quick))
    bilm.init_weights(model, seed=seed)
    bilm.export_official(model, out_dir)
    size = (out_dir / "weights.hdf5").stat().st_size
    marker = {"seed": seed, "bytes": size, "seconds": round(time.perf_counter() - start, 1)}
    (out_dir / "complete.json").write_text(json.dumps(marker) + "\n", encoding="utf-8")


def ensure_model(seed: int, quick: bool = False) -> tuple[Path, Path, str]:
    """The cached model files, written by a child process when missing.

    Returns:
        ``(options.json, weights.hdf5, how)``: ``how`` says whether the files were cached or
        written (and how long that took) and where they are.
    """
    out = model_dir(seed, quick)
    if (out / "complete.json").exists() and (out / "weights.hdf5").exists():
        return out / "options.json", out / "weights.hdf5", f"cached ({shown(out)})"
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    cmd = [sys.executable, str(ENTRY), "--write-model", str(out)]
    cmd += ["--quick"] if quick else []
    subprocess.run([*cmd, "--seed", str(seed)], check=True)
    took = time.perf_counter() - start
    return out / "options.json", out / "weights.hdf5", f"written in {took:.1f} s ({shown(out)})"


def load_stage(options_path: Path, weights_path: Path, report: dict[str, Any]) -> tuple[BiLM, int]:
    """The ``[load]`` section: :func:`bilm.load_official` timed, parameters, peak RSS.

    Returns:
        The loaded model (state ``reset``) and the peak RSS right after loading.
    """
    start = time.perf_counter()
    model = bilm.load_official(options_path, weights_path, state="reset")
    load_s = time.perf_counter() - start
    rss_after_load = peak_rss_bytes()
    n_params = sum(p.numel() for p in model.parameters())
    print("\n[load]")
    print(f"  load_official: {load_s:.2f} s (file likely in page cache); {n_params:,} parameters")
    print(f"  peak RSS after load: {fmt_bytes(rss_after_load)}")
    report["load"] = {"seconds": load_s, "parameters": n_params, "peak_rss_bytes": rss_after_load}
    return model, rss_after_load
