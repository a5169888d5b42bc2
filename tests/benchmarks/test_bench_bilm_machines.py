"""The machine-facing pieces of ``benchmarks/bench_bilm.py`` (:mod:`benchmarks.bilm_speed`): CPU
features, the allennlp-style forward, the fp32 path switches, the alternating pairs, the
under-load settings and their OpenMP environment, the command line, the targets table and the
``--out`` file's header (nothing is timed)."""

from __future__ import annotations

import io
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import bilm.load
import bilm.lstm
from benchmarks.allennlp_step import AllennlpStyleBiLM
from benchmarks.bilm_speed import contention
from benchmarks.bilm_speed.cli import QUICK_DEFAULTS, parse_args
from benchmarks.bilm_speed.contention import load_settings
from benchmarks.bilm_speed.fp32_paths import available_fp32_paths, fp32_path
from benchmarks.bilm_speed.measure import alternate, forward, pair_ratio
from benchmarks.bilm_speed.targets import Figures, print_targets
from benchmarks.common import background_load, provenance, tee_stdout
from bilm import batch_to_ids
from bilm.devices import openmp_environment
from bilm.load import UNDER_LOAD_ENV
from bilm.machine import (
    FP32_STEP_ENV,
    CpuFeatures,
    cpu_features,
    cpu_kind,
    fastest_fp32_step,
    features_from_capability,
    parse_cpuinfo,
)
from tests.bilm.helpers import SENTENCES, tiny_bilm

SAPPHIRE_RAPIDS = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480C\n"
    "flags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512_bf16 avx512_vnni amx_bf16 "
    "amx_tile amx_int8 avx_vnni\n\n"
    "processor\t: 1\nmodel name\t: something else\nflags\t\t: fpu\n"
)
ZEN4 = (
    "model name\t: AMD EPYC 9654 96-Core Processor\n"
    "flags\t\t: fpu avx avx2 avx512f avx512bw avx512_bf16 avx512_vnni avx512vl\n"
)
BROADWELL = "model name\t: Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz\nflags\t\t: sse2 avx avx2\n"
ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes\n"


# ------------------------------------------------------------------------------ CPU features
def test_cpuinfo_parsing_reads_the_first_processor() -> None:
    name, flags = parse_cpuinfo(SAPPHIRE_RAPIDS)
    assert name == "Intel(R) Xeon(R) Platinum 8480C"
    assert {"amx_tile", "amx_bf16", "amx_int8", "avx512_bf16"} <= flags
    assert "something else" not in name
    assert parse_cpuinfo(ARM) == ("", frozenset())


@pytest.mark.parametrize(
    ("text", "labels", "kind"),
    [
        (
            SAPPHIRE_RAPIDS,
            (
                "AVX2",
                "AVX-512F",
                "AVX-512-BF16",
                "AVX-512-VNNI",
                "AMX-TILE",
                "AMX-BF16",
                "AMX-INT8",
            ),
            "intel-xeon-amx",
        ),
        (ZEN4, ("AVX2", "AVX-512F", "AVX-512-BF16", "AVX-512-VNNI"), "amd-epyc-avx512"),
        (BROADWELL, ("AVX2",), "intel-xeon-avx2"),
    ],
)
def test_features_and_kind_from_cpuinfo(
    tmp_path: Path, text: str, labels: tuple[str, ...], kind: str
) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(text)
    features = cpu_features(info)
    assert features.source == "cpuinfo"
    assert features.labels() == labels
    assert cpu_kind(features) == kind
    assert features.to_dict()["labels"] == list(labels)
    assert "from /proc/cpuinfo" in features.summary()


def test_without_flags_the_features_come_from_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(ARM)
    monkeypatch.setattr("bilm.machine._torch_capability", lambda: "AVX512")
    features = cpu_features(info)
    assert features.source == "torch" and features.labels() == ("AVX2", "AVX-512F")
    assert not features.amx_tile and not features.avx512_bf16  # torch cannot tell
    monkeypatch.setattr("bilm.machine._torch_capability", lambda: "")
    assert cpu_features(tmp_path / "missing").source == "none"
    assert features_from_capability("x", "AVX2").labels() == ("AVX2",)
    assert features_from_capability("x", "DEFAULT").labels() == ()
    assert cpu_kind(CpuFeatures(model="Apple M2")) == "apple-m2"


def test_fp32_step_override_and_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    assert fastest_fp32_step(environ={FP32_STEP_ENV: "addmm"}) == "addmm"
    assert fastest_fp32_step(environ={FP32_STEP_ENV: " Packed "}) == "packed"
    with pytest.raises(ValueError, match=FP32_STEP_ENV):
        fastest_fp32_step(environ={FP32_STEP_ENV: "fast"})
    assert fastest_fp32_step(rows=4, hidden=8, cell=8, environ={}) in ("packed", "addmm")


# ------------------------------------------------------------------------------ allennlp-style
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"n_highway": 2, "activation": "tanh"},
        {"skip": False, "n_layers": 1},
        {"projection_dim": 24},  # no projection (P == C)
    ],
)
def test_allennlp_style_forward_matches_bilm(kwargs: dict[str, Any]) -> None:
    model = tiny_bilm(seed=3, **kwargs)
    with torch.no_grad():  # larger LSTM weights: gates saturate and both clips bite
        for pair in model.lstms:
            for cell in pair:
                cell.w_input.mul_(8.0)
                cell.w_state.mul_(8.0)
    ids = batch_to_ids(SENTENCES)
    reference = AllennlpStyleBiLM.from_bilm(model).eval()
    with torch.no_grad():
        ours = model(ids).layers  # (L+1, B, T, 2P)
        theirs = reference(ids)
    assert theirs.shape == ours.shape
    assert float((ours - theirs).abs().max()) <= 1e-5
    assert float(ours[1:].abs().max()) > 1.0  # the test exercises large activations
    assert float(theirs[:, 2].abs().max()) == 0.0  # the empty sentence: all zeros


def test_allennlp_style_forward_is_not_ours() -> None:
    model = tiny_bilm(seed=0)
    reference = AllennlpStyleBiLM.from_bilm(model).eval()
    with torch.no_grad():
        reference.pairs[0][1].state_linearity.bias.add_(0.5)  # a change must show
        diff = (model(batch_to_ids(SENTENCES)).layers - reference(batch_to_ids(SENTENCES))).abs()
    assert float(diff.max()) > 1e-3


# ------------------------------------------------------------------------------ bench pieces
def test_fp32_path_switches_are_restored() -> None:
    saved = (bilm.lstm._PACKING, bilm.lstm._FUSED_ADD, bilm.lstm.MAX_TABLE_WORDS)
    paths = available_fp32_paths()
    first = next(iter(paths))
    assert paths[first] == (bilm.lstm._PACKING, bilm.lstm._FUSED_ADD, True)
    model = tiny_bilm(seed=1)
    ids = batch_to_ids(SENTENCES)
    expected = forward(model, ids)
    for switches in paths.values():
        with fp32_path(*switches):
            assert bilm.lstm.MAX_TABLE_WORDS == (saved[2] if switches[2] else 0)
            assert not bilm.lstm._PACKING or switches[0]
            got = forward(model, ids)
        assert float((got - expected).abs().max()) <= 1e-5  # every path is exact fp32
    assert (bilm.lstm._PACKING, bilm.lstm._FUSED_ADD, bilm.lstm.MAX_TABLE_WORDS) == saved


def test_alternating_pairs_and_ratios() -> None:
    calls: list[str] = []
    a, b = alternate(lambda: calls.append("a"), lambda: calls.append("b"), 3)
    assert calls == ["a", "b", "b", "a", "a", "b"] and len(a) == len(b) == 3
    per_pair, of_medians = pair_ratio([1.0, 2.0, 1.0], [3.0, 4.0, 2.0])
    assert per_pair == 2.0 and of_medians == 3.0


def test_load_settings_put_the_default_first() -> None:
    settings = load_settings(2)
    assert settings[0] == (2, None, "adapt")  # the default: bilm.load's rule on
    assert (2, None, "keep") in settings  # the same without the rule: its idle cost
    assert {p for _, p, _ in settings} == {None, "PASSIVE", "ACTIVE"}
    assert (1, None, "keep") in settings
    assert load_settings(1) == [(1, None, "adapt"), (1, "PASSIVE", "adapt")]


def test_rule_pairs_alternate_the_rule_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []
    monkeypatch.setattr(
        contention, "forward", lambda model, ids: seen.append(os.environ.get(UNDER_LOAD_ENV))
    )
    monkeypatch.setattr(bilm.load, "reduced", lambda: True)  # every pass ends on one thread
    monkeypatch.setenv(UNDER_LOAD_ENV, "adapt")
    on, off, switched = contention._rule_pairs(tiny_bilm(), torch.zeros(1, 1, 50), 3)
    assert seen == ["adapt", "keep", "keep", "adapt", "adapt", "keep"]  # order swapped each pair
    assert len(on) == len(off) == 3 and switched == 3  # only the rule's passes are counted
    assert os.environ[UNDER_LOAD_ENV] == "adapt"  # the caller's setting is restored
    monkeypatch.setattr(bilm.load, "reduced", lambda: False)
    monkeypatch.delenv(UNDER_LOAD_ENV)
    assert contention._rule_pairs(tiny_bilm(), torch.zeros(1, 1, 50), 1)[2] == 0
    assert UNDER_LOAD_ENV not in os.environ


def test_quick_fills_unset_sizes_only() -> None:
    quick = parse_args(["--quick", "--pairs", "5"])
    assert quick.pairs == 5 and quick.repeats == QUICK_DEFAULTS["repeats"][0]
    full = parse_args([])
    assert full.repeats == 7 and full.compare_natural == 400 and full.load and full.allennlp
    with pytest.raises(SystemExit):
        parse_args(["--load-nice", "-1"])


def test_openmp_environment_for_children() -> None:
    env = openmp_environment({"PATH": "/bin"}, threads=1)
    assert env == {
        "PATH": "/bin",
        "OMP_WAIT_POLICY": "PASSIVE",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    assert openmp_environment({"OMP_WAIT_POLICY": "active"})["OMP_WAIT_POLICY"] == "active"
    assert "OMP_WAIT_POLICY" not in openmp_environment({}, wait_policy=None)
    assert openmp_environment({}, wait_policy="active")["OMP_WAIT_POLICY"] == "ACTIVE"
    with pytest.raises(ValueError, match="wait_policy"):
        openmp_environment({}, wait_policy="sometimes")
    with pytest.raises(ValueError, match="threads"):
        openmp_environment({}, threads=0)


def test_background_load_runs_and_is_killed() -> None:
    with background_load("spin", nice=19) as proc:
        assert proc.poll() is None
    assert proc.returncode is not None
    with pytest.raises(ValueError, match="load kind"):
        with background_load("nothing"):
            pass


def test_tee_stdout_copies_to_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = io.StringIO()
    monkeypatch.setattr(sys, "stdout", real)
    out = tmp_path / "sub" / "bench.txt"
    with tee_stdout(out):
        print("machine kind: test")
    assert out.read_text() == "machine kind: test\n"
    assert real.getvalue().startswith("machine kind: test\n")


def test_out_file_starts_with_commit_cpu_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = io.StringIO()
    monkeypatch.setattr(sys, "stdout", real)
    argv = ["--quick", "--out", "results/benchmarks/bench_bilm-{kind}.txt"]
    header = provenance("benchmarks/bench_bilm.py", argv)
    out = tmp_path / "bench.txt"
    with tee_stdout(out, header=header):
        print("ELMo biLM speed benchmark")
    lines = out.read_text().splitlines()
    assert re.fullmatch(
        r"commit: ([0-9a-f]{40}(, with uncommitted changes to .+)?|unknown .+)", lines[0]
    )
    assert lines[1].startswith("CPU: ") and len(lines[1]) > len("CPU: ")
    assert lines[2] == (
        "command: python benchmarks/bench_bilm.py --quick --out "
        "'results/benchmarks/bench_bilm-{kind}.txt'"
    )
    assert lines[3:] == ["", "ELMo biLM speed benchmark"]
    assert real.getvalue().startswith("ELMo biLM speed benchmark\n")  # stdout: no header


def test_targets_mark_skipped_and_informative_lines(capsys: pytest.CaptureFixture[str]) -> None:
    figures = Figures(
        tokens_per_s=845.0,
        roofline_fraction=0.742,
        max_diff=6.5e-7,
        peak_rss_ours=1.474e9,
        ceiling_tokens_per_s=1577.0,
        straight_tokens_per_s=256.0,
        straight_diff=9.5e-7,
        int8_speedup=2.01,
        int8_dev=9.7e-3,
    )
    report: dict[str, Any] = {}
    print_targets(figures, report)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["", "[targets]"]
    marks = [line.split()[0] for line in lines[2:]]
    assert marks == ["MISS", "MISS", "PASS", "MISS", "INFO", "PASS", "PASS", "INFO"] + ["SKIP"] * 6
    assert "x3.30 straightforward" in lines[6] and "not available (no bf16 unit)" in lines[9]
    assert len(report["targets"]) == 14
    assert not [name for name in report["targets"] if "#" in name]  # no issue numbers
