"""The machine a number was measured on: the CPU model and its vector units.

Imports nothing heavy (no torch), so run records and benchmarks can call it anywhere.
"""

from __future__ import annotations

import platform
from pathlib import Path

__all__ = ["cpu_model"]


#: /proc/cpuinfo flags → the vector and matrix units they name (most capable last).
_CPU_UNITS = (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("amx_tile", "AMX"))


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model and vector units, e.g. ``"AMD EPYC (AVX2)"`` or ``"Intel(R) Xeon(R)
    Platinum 8480C (AVX2, AVX-512, AMX)"`` (from ``/proc/cpuinfo``; the platform's processor
    string elsewhere). Float summation order differs between such kinds, so every figure and
    every run record says which ran it.

    Args:
        cpuinfo: the file read (Linux's ``/proc/cpuinfo``).
    """
    name, flags = "", set[str]()
    try:
        for line in cpuinfo.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not name:
                name = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    units = [label for flag, label in _CPU_UNITS if flag in flags]
    name = name or platform.processor() or "unknown CPU"
    return f"{name} ({', '.join(units)})" if units else name
