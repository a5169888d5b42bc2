"""bilm.load: one thread while another process competes for the cores, same results.

The rule is driven here through a fake ``/proc`` and a fake clock; its speed effect is measured
by ``benchmarks/bench_bilm.py`` ("under load"), never in a test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import bilm.load as load
from bilm import batch_to_ids
from tests.bilm.helpers import SENTENCES, tiny_bilm


class FakeProc:
    """``/proc/self/task/*/schedstat`` and ``/proc/stat`` with values the test sets."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cpus = sorted(os.sched_getaffinity(0))
        (root / "self" / "task" / "1").mkdir(parents=True)
        (root / "self" / "task" / "2").mkdir(parents=True)
        self.write(wait_ns=0, busy_ticks=0, idle_ticks=0)

    def write(self, wait_ns: int, busy_ticks: int, idle_ticks: int) -> None:
        half = wait_ns // 2
        for task, wait in (("1", half), ("2", wait_ns - half)):
            (self.root / "self" / "task" / task / "schedstat").write_text(f"1000 {wait} 7\n")
        lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
        for k, cpu in enumerate(self.cpus):  # all busy ticks on the first CPU, idle spread
            busy = busy_ticks if k == 0 else 0
            idle = idle_ticks // len(self.cpus)
            lines.append(f"cpu{cpu} {busy} 0 0 {idle} 0 0 0 0 0 0")
        (self.root / "stat").write_text("\n".join(lines) + "\n")


class FakeClock:
    def __init__(self) -> None:
        self.wall = 100.0
        self.own = 5.0

    def perf_counter(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.own


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[FakeProc, FakeClock]]:
    proc, clock = FakeProc(tmp_path), FakeClock()
    monkeypatch.setattr(load, "_PROC", tmp_path)
    monkeypatch.setattr(load, "time", clock)
    monkeypatch.setattr(load._Process, "reduced", False)
    monkeypatch.delenv(load.UNDER_LOAD_ENV, raising=False)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    yield proc, clock
    torch.set_num_threads(previous)


def test_waiting_for_a_cpu_drops_to_one_thread_and_the_pass_restores_the_count(
    fake: tuple[FakeProc, FakeClock],
) -> None:
    proc, clock = fake
    cpu = torch.device("cpu")
    with torch.no_grad(), load.threads_under_load(cpu):
        clock.wall += 0.1
        proc.write(wait_ns=int(0.01e9), busy_ticks=0, idle_ticks=0)  # waited 10 %: no change
        load.check_load()
        assert torch.get_num_threads() == 2 and not load.reduced()
        clock.wall += 0.1
        proc.write(wait_ns=int(0.01e9 + 0.05e9), busy_ticks=0, idle_ticks=0)  # 50 % of 0.1 s
        load.check_load()
        assert torch.get_num_threads() == 1 and load.reduced()
    assert torch.get_num_threads() == 2  # the caller's count, restored
    assert load.reduced()  # remembered: the next pass starts on one thread
    with torch.no_grad(), load.threads_under_load(cpu):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2


def test_one_thread_until_the_other_processes_leave_room_for_the_team(
    fake: tuple[FakeProc, FakeClock],
) -> None:
    proc, clock = fake
    load._Process.reduced = True
    cpu = torch.device("cpu")
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    free = len(proc.cpus) - 2  # CPUs the 2-thread team does not need
    with torch.no_grad(), load.threads_under_load(cpu):
        assert torch.get_num_threads() == 1
        # 0.5 s: this process used 0.5 CPU-s, another process one whole CPU besides: stay.
        clock.wall += 0.5
        clock.own += 0.5
        busy = round((0.5 + 0.5 * (1 + free)) / tick)
        proc.write(wait_ns=0, busy_ticks=busy, idle_ticks=0)
        load.check_load()
        assert torch.get_num_threads() == 1 and load.reduced()
        # the next 0.5 s: only this process (and the CPUs the team leaves free) were busy
        clock.wall += 0.5
        clock.own += 0.5
        proc.write(wait_ns=0, busy_ticks=busy + round((0.5 + 0.5 * free) / tick), idle_ticks=50)
        load.check_load()
        assert torch.get_num_threads() == 2 and not load.reduced()


def test_a_short_window_is_not_judged(fake: tuple[FakeProc, FakeClock]) -> None:
    proc, clock = fake
    with torch.no_grad(), load.threads_under_load(torch.device("cpu")):
        clock.wall += load.WINDOW_FULL / 2
        proc.write(wait_ns=int(1e9), busy_ticks=0, idle_ticks=0)
        load.check_load()
        assert torch.get_num_threads() == 2


@pytest.mark.parametrize("case", ["keep", "grad", "one thread", "no proc"])
def test_the_rule_is_off(
    case: str, fake: tuple[FakeProc, FakeClock], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    proc, clock = fake
    if case == "keep":
        monkeypatch.setenv(load.UNDER_LOAD_ENV, "keep")
    if case == "one thread":
        torch.set_num_threads(1)
    if case == "no proc":
        monkeypatch.setattr(load, "_PROC", tmp_path / "missing")
    threads = torch.get_num_threads()
    with torch.set_grad_enabled(case == "grad"), load.threads_under_load(torch.device("cpu")):
        assert not load._ACTIVE
        clock.wall += 1.0
        proc.write(wait_ns=int(1e9), busy_ticks=0, idle_ticks=0)
        load.check_load()
        assert torch.get_num_threads() == threads and not load.reduced()


def test_outputs_are_bit_identical_at_one_and_two_threads() -> None:
    # The rule may change the thread count inside a pass: results must not depend on it.
    ids = batch_to_ids(SENTENCES)
    previous = torch.get_num_threads()
    try:
        for precision in ("fp32", "bf16", "int8"):
            model = tiny_bilm(seed=3).to_precision(precision)  # type: ignore[arg-type]
            outputs = []
            for threads in (1, 2):
                torch.set_num_threads(threads)
                with torch.no_grad():
                    outputs.append(model(ids).layers)
            assert torch.equal(outputs[0], outputs[1]), precision
    finally:
        torch.set_num_threads(previous)


def test_a_pass_that_raises_restores_the_thread_count(fake: tuple[FakeProc, FakeClock]) -> None:
    proc, clock = fake
    with pytest.raises(RuntimeError), torch.no_grad(), load.threads_under_load(torch.device("cpu")):
        clock.wall += 0.1
        proc.write(wait_ns=int(0.1e9), busy_ticks=0, idle_ticks=0)
        load.check_load()
        assert torch.get_num_threads() == 1
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 2 and not load._ACTIVE
