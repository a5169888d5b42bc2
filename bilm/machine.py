"""The machine a number was measured on: the CPU model, its vector and matrix units, its kind.

Imports nothing heavy at import time (no torch), so run records and benchmarks can call it
anywhere; :func:`cpu_features` (only where ``/proc/cpuinfo`` has no flags) and
:func:`fastest_fp32_step` import torch when called.

::

    from bilm.machine import cpu_features, cpu_kind, fastest_fp32_step

    features = cpu_features()   # CpuFeatures(model="AMD EPYC", avx2=True, avx512f=True, ...)
    features.labels()           # ("AVX2", "AVX-512F", "AVX-512-BF16", "AVX-512-VNNI")
    cpu_kind(features)          # "amd-epyc-avx512": names results/benchmarks/bench_bilm-<kind>.txt
    fastest_fp32_step()         # "packed" or "addmm": the faster exact fp32 recurrent GEMM here
"""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

__all__ = [
    "FP32_STEP_ENV",
    "CpuFeatures",
    "Fp32Step",
    "cpu_features",
    "cpu_kind",
    "cpu_model",
    "fastest_fp32_step",
    "features_from_capability",
    "parse_cpuinfo",
]

CPUINFO = Path("/proc/cpuinfo")

#: /proc/cpuinfo flags → the vector and matrix units they name (most capable last).
_CPU_UNITS = (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("amx_tile", "AMX"))

#: ``CpuFeatures`` field → (Linux /proc/cpuinfo flag, label printed by the benchmarks).
_FEATURE_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("avx2", "avx2", "AVX2"),
    ("avx512f", "avx512f", "AVX-512F"),
    ("avx512_bf16", "avx512_bf16", "AVX-512-BF16"),
    ("avx512_vnni", "avx512_vnni", "AVX-512-VNNI"),
    ("amx_tile", "amx_tile", "AMX-TILE"),
    ("amx_bf16", "amx_bf16", "AMX-BF16"),
    ("amx_int8", "amx_int8", "AMX-INT8"),
)

#: Environment variable that overrides :func:`fastest_fp32_step` (``packed`` or ``addmm``).
FP32_STEP_ENV = "ELMO_BENCH_FP32_STEP"

Fp32Step = Literal["packed", "addmm"]
_FP32_STEPS: tuple[Fp32Step, ...] = ("packed", "addmm")


@dataclasses.dataclass(frozen=True)
class CpuFeatures:
    """What the CPU offers the biLM's GEMMs.

    Attributes:
        model: the CPU's model name (``/proc/cpuinfo``), else the platform's processor string.
        source: where the unit flags came from: ``"cpuinfo"`` (Linux flags), ``"torch"``
            (:func:`torch.backends.cpu.get_cpu_capability`: AVX2 / AVX-512 only, the bf16,
            VNNI and AMX units then read as absent) or ``"none"``.
        avx2, avx512f: 256- and 512-bit vector units (fp32 GEMM width).
        avx512_bf16, avx512_vnni: AVX-512 bfloat16 dot products and int8 dot products.
        amx_tile, amx_bf16, amx_int8: Intel AMX tile registers and their bf16 / int8 multiplies.
    """

    model: str
    source: Literal["cpuinfo", "torch", "none"] = "none"
    avx2: bool = False
    avx512f: bool = False
    avx512_bf16: bool = False
    avx512_vnni: bool = False
    amx_tile: bool = False
    amx_bf16: bool = False
    amx_int8: bool = False

    def labels(self) -> tuple[str, ...]:
        """The units present, e.g. ``("AVX2", "AVX-512F", "AMX-TILE", "AMX-BF16")``."""
        return tuple(label for field, _, label in _FEATURE_FLAGS if getattr(self, field))

    def summary(self) -> str:
        """One line for benchmark headers: ``"AVX2, AVX-512F (from /proc/cpuinfo)"``."""
        units = ", ".join(self.labels()) or "no AVX2/AVX-512/AMX"
        where = {"cpuinfo": "from /proc/cpuinfo", "torch": "from torch's CPU capability"}
        return f"{units} ({where.get(self.source, 'not detected')})"

    def to_dict(self) -> dict[str, object]:
        """Every field plus ``labels``, for JSON reports."""
        return {**dataclasses.asdict(self), "labels": list(self.labels())}


def parse_cpuinfo(text: str) -> tuple[str, frozenset[str]]:
    """The first processor's model name and flags in a ``/proc/cpuinfo`` text.

    Args:
        text: the file's contents (``key : value`` lines, one block per logical CPU).

    Returns:
        ``(model name or "", flags)``; the flags are empty where the text has no ``flags`` line
        (e.g. ARM's ``Features``, which name no x86 unit).
    """
    name, flags = "", frozenset[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not name:
            name = value.strip()
        elif key == "flags" and not flags:
            flags = frozenset(value.split())
    return name, flags


def features_from_capability(model: str, capability: str) -> CpuFeatures:
    """Features implied by torch's dispatch level (``"AVX512"``, ``"AVX2"``, ``"DEFAULT"`` ...).

    torch only reports the vector width it dispatches to, so bf16, VNNI and AMX read as absent.
    """
    level = capability.upper().replace("-", "").replace("_", "")
    avx512 = level.startswith("AVX512")
    return CpuFeatures(
        model=model, source="torch", avx2=avx512 or level.startswith("AVX2"), avx512f=avx512
    )


def _torch_capability() -> str:
    try:
        import torch

        return str(torch.backends.cpu.get_cpu_capability())
    except (ImportError, AttributeError, RuntimeError):
        return ""


def cpu_features(cpuinfo: Path = CPUINFO) -> CpuFeatures:
    """The CPU's model and its AVX2 / AVX-512 (F, BF16, VNNI) / AMX (tile, bf16, int8) units.

    Reads Linux's ``/proc/cpuinfo`` flags; where there are none (another OS, a container that
    hides them), falls back to :func:`torch.backends.cpu.get_cpu_capability` (AVX2/AVX-512
    only).

    Args:
        cpuinfo: the file read.
    """
    try:
        name, flags = parse_cpuinfo(cpuinfo.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        name, flags = "", frozenset()
    name = name or platform.processor() or "unknown CPU"
    if flags:
        present = {field: flag in flags for field, flag, _ in _FEATURE_FLAGS}
        return CpuFeatures(model=name, source="cpuinfo", **present)
    capability = _torch_capability()
    if capability:
        return features_from_capability(name, capability)
    return CpuFeatures(model=name)


def cpu_kind(features: CpuFeatures | None = None) -> str:
    """A short file-name-safe name of the machine kind: vendor and family, then the widest unit.

    E.g. ``"amd-epyc-avx512"``, ``"intel-xeon-amx"``, ``"apple-m2"``; used to name
    ``results/benchmarks/bench_bilm-<kind>.txt``.

    Args:
        features: from :func:`cpu_features` (read now when ``None``).
    """
    features = features if features is not None else cpu_features()
    name = re.sub(r"\((r|tm)\)|\bcpu\b|\bprocessor\b|@.*$", " ", features.model.lower())
    words = re.findall(r"[a-z0-9]+", name)
    family = "-".join(words[:2]) or "cpu"
    if features.amx_tile:
        unit = "amx"
    elif features.avx512f:
        unit = "avx512"
    elif features.avx2:
        unit = "avx2"
    else:
        unit = ""
    return f"{family}-{unit}" if unit else family


def cpu_model(cpuinfo: Path = CPUINFO) -> str:
    """The CPU's model and vector units, e.g. ``"AMD EPYC (AVX2)"`` or ``"Intel(R) Xeon(R)
    Platinum 8480C (AVX2, AVX-512, AMX)"`` (from ``/proc/cpuinfo``; the platform's processor
    string elsewhere). Float summation order differs between such kinds, so every figure and
    every run record says which ran it.

    Args:
        cpuinfo: the file read (Linux's ``/proc/cpuinfo``).
    """
    try:
        name, flags = parse_cpuinfo(cpuinfo.read_text(encoding="utf-8"))
    except OSError:
        name, flags = "", frozenset()
    units = [label for flag, label in _CPU_UNITS if flag in flags]
    name = name or platform.processor() or "unknown CPU"
    return f"{name} ({', '.join(units)})" if units else name


def fastest_fp32_step(
    rows: int = 64,
    hidden: int = 512,
    cell: int = 4096,
    threads: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Fp32Step:
    """The faster exact fp32 kernel for the LSTM's per-step products on this machine.

    ``"packed"``: oneDNN GEMMs on weights pre-packed once (the state product with the input
    product added inside it, and the projection), as :mod:`bilm.lstm` runs them when oneDNN is
    available; ``"addmm"``: torch's ``addmm``/``mm`` (MKL or OpenBLAS) on the plain weights. Both
    are float32 throughout; they differ only in summation order.

    Measured once per process for each shape and thread count (about 0.3–1 s at the default
    full-size shape: both kernels on a ``rows × hidden → 4·cell`` and a ``rows × cell → hidden``
    product, best of a few interleaved rounds), then remembered. ``$ELMO_BENCH_FP32_STEP``
    (``packed`` or ``addmm``) overrides the measurement; without oneDNN the answer is
    ``"addmm"``. ``benchmarks/bench_bilm.py`` prints this choice next to the whole-model timing
    of each path.

    Args:
        rows: active rows of a step (the batch).
        hidden: state width (the LSTM's projection P).
        cell: memory cell width C (the gates are 4C wide).
        threads: torch threads the choice is for (default: the current setting).
        environ: where to read the override (default: ``os.environ``).

    Raises:
        ValueError: the override names neither kernel.
    """
    env = os.environ if environ is None else environ
    forced = env.get(FP32_STEP_ENV, "").strip().lower()
    if forced:
        if forced not in _FP32_STEPS:
            raise ValueError(f"{FP32_STEP_ENV}={forced}: expected one of {', '.join(_FP32_STEPS)}")
        return "packed" if forced == "packed" else "addmm"
    import torch

    n_threads = threads if threads is not None else torch.get_num_threads()
    return _measure_fp32_step(rows, hidden, cell, n_threads)


@functools.lru_cache(maxsize=32)
def _measure_fp32_step(rows: int, hidden: int, cell: int, threads: int) -> Fp32Step:
    import torch

    if not torch.backends.mkldnn.is_available():
        return "addmm"
    from bilm.lstm import _packed_mm, _packed_mm_add

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        gen = torch.Generator().manual_seed(0)
        h = torch.randn(rows, hidden, generator=gen)  # (n, P)
        m = torch.randn(rows, cell, generator=gen)  # (n, C)
        zin = torch.randn(rows, 4 * cell, generator=gen)  # (n, 4C)
        w_state = torch.randn(hidden, 4 * cell, generator=gen) * 0.05  # (P, 4C)
        w_proj = torch.randn(cell, hidden, generator=gen) * 0.05  # (C, P)
        z_out = torch.empty(rows, 4 * cell)
        h_out = torch.empty(rows, hidden)
        try:
            p_state = torch.ops.mkldnn._reorder_linear_weight(w_state.t().contiguous(), rows)
            p_proj = torch.ops.mkldnn._reorder_linear_weight(w_proj.t().contiguous(), rows)
        except (RuntimeError, AttributeError):
            return "addmm"

        def packed() -> None:
            _packed_mm_add(h, zin, p_state)  # (n, 4C)
            _packed_mm(m, p_proj)  # (n, P)

        def addmm() -> None:
            torch.addmm(zin, h, w_state, out=z_out)  # (n, 4C)
            torch.mm(m, w_proj, out=h_out)  # (n, P)

        kernels = {"packed": packed, "addmm": addmm}
        flop = 2.0 * rows * (hidden * 4 * cell + cell * hidden)
        inner = max(1, min(20, round(2e8 / flop)))  # ~0.2 GFLOP per sample
        times: dict[str, list[float]] = {name: [] for name in kernels}
        for fn in kernels.values():
            fn()  # warm-up: first-call allocations and oneDNN primitive creation
        for _ in range(5):  # interleaved, so that both see the same load
            for name, fn in kernels.items():
                start = time.perf_counter()
                for _ in range(inner):
                    fn()
                times[name].append(time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)
    return "packed" if min(times["packed"]) <= min(times["addmm"]) else "addmm"
