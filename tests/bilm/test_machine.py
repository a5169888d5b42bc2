"""The CPU description every figure and run record carries."""

from __future__ import annotations

from pathlib import Path

from bilm.machine import cpu_model


def test_cpu_model_names_the_model_and_its_vector_units(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480C\n"
        "flags\t\t: fpu sse2 avx avx2 avx512f amx_tile amx_bf16\n\n"
        "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480C\nflags\t\t: fpu\n"
    )
    assert cpu_model(info) == "Intel(R) Xeon(R) Platinum 8480C (AVX2, AVX-512, AMX)"
    info.write_text("model name\t: AMD EPYC\nflags\t\t: fpu avx2\n")
    assert cpu_model(info) == "AMD EPYC (AVX2)"
    assert cpu_model(tmp_path / "missing")  # the platform's string, never empty
