"""bilm.devices: --device/--precision resolution, autocast, gradient scaler (CUDA faked)."""

from __future__ import annotations

import pytest
import torch

from bilm import devices
from bilm.devices import (
    NO_CUDA,
    DeviceError,
    autocast,
    autocast_dtype,
    distributed_backend,
    exact_fp32,
    make_scaler,
    resolve_device,
    resolve_precision,
    synchronize,
    torchrun_local_rank,
)

CPU = torch.device("cpu")


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


def fake_cuda(monkeypatch: pytest.MonkeyPatch, count: int, bf16: bool = True) -> None:
    """Pretend ``count`` GPUs are visible (nothing here may launch a kernel)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: "Fake GPU")


# ------------------------------------------------------------------------------ devices
@pytest.mark.parametrize("spec", ["cpu", "CPU", " cpu ", CPU])
def test_cpu_is_always_available(spec: str | torch.device) -> None:
    assert resolve_device(spec) == CPU


def test_auto_without_cuda_is_the_cpu(no_cuda: None) -> None:
    assert resolve_device("auto") == CPU
    assert resolve_device("auto", local_rank=1) == CPU  # torchrun on CPUs: gloo
    assert resolve_device() == CPU


@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "auto-cuda"])
def test_cuda_without_cuda_says_use_cpu(no_cuda: None, spec: str) -> None:
    with pytest.raises(DeviceError) as info:
        resolve_device(spec)
    if spec == "auto-cuda":
        assert "expected auto | cpu | cuda | cuda:N" in str(info.value)
    else:
        assert str(info.value) == NO_CUDA
        assert "use --device cpu" in str(info.value)


@pytest.mark.parametrize("spec", ["tpu", "mps", "cuda:x", "cuda:-1", "", "gpu"])
def test_unknown_specs_are_refused(spec: str) -> None:
    with pytest.raises(DeviceError, match="expected auto"):
        resolve_device(spec)


def test_cuda_specs_with_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, 2)
    assert resolve_device("auto") == torch.device("cuda", 0)
    assert resolve_device("cuda") == torch.device("cuda", 0)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    assert resolve_device("cpu") == CPU


def test_index_beyond_the_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, 1)
    with pytest.raises(DeviceError) as info:
        resolve_device("cuda:1")
    assert str(info.value) == "--device cuda:1 asked for, but only 1 CUDA device is visible"
    fake_cuda(monkeypatch, 2)
    with pytest.raises(DeviceError, match="but only 2 CUDA devices are visible"):
        resolve_device("cuda:5")


def test_torchrun_ranks_take_their_own_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cuda(monkeypatch, 2)
    assert resolve_device("auto", local_rank=1) == torch.device("cuda", 1)
    assert resolve_device("cuda", local_rank=0) == torch.device("cuda", 0)
    assert resolve_device("cpu", local_rank=1) == CPU
    with pytest.raises(DeviceError, match="every data-parallel process on one GPU"):
        resolve_device("cuda:0", local_rank=1)
    with pytest.raises(DeviceError, match="local rank 2 needs cuda:2, but only 2 CUDA devices"):
        resolve_device("cuda", local_rank=2)


def test_torchrun_local_rank_reads_the_environment() -> None:
    assert torchrun_local_rank({}) is None
    assert torchrun_local_rank({"WORLD_SIZE": "1", "LOCAL_RANK": "0"}) is None
    assert torchrun_local_rank({"WORLD_SIZE": "4", "LOCAL_RANK": "3"}) == 3
    assert torchrun_local_rank({"WORLD_SIZE": "2"}) == 0


def test_distributed_backend() -> None:
    assert distributed_backend(CPU) == "gloo"
    assert distributed_backend(torch.device("cuda", 0)) == "nccl"


def test_describe_and_synchronize(monkeypatch: pytest.MonkeyPatch) -> None:
    assert devices.describe_device(CPU) == "cpu"
    synchronize(CPU)  # no-op
    fake_cuda(monkeypatch, 1)
    assert devices.describe_device(torch.device("cuda", 0)) == "cuda:0 (Fake GPU)"
    calls: list[torch.device] = []
    monkeypatch.setattr(torch.cuda, "synchronize", calls.append)
    synchronize(torch.device("cuda", 0))
    assert calls == [torch.device("cuda", 0)]


# ------------------------------------------------------------------------------ precision
def test_precisions_on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    assert devices.PRECISIONS == ("fp32", "bf16", "fp16")
    assert resolve_precision(CPU, "fp32") == "fp32"
    for unit in ("AMX", "AVX-512-bf16"):
        monkeypatch.setattr(devices, "cpu_bf16_unit", lambda unit=unit: unit)
        assert resolve_precision(CPU, "bf16") == "bf16"
    monkeypatch.setattr(devices, "cpu_bf16_unit", lambda: None)  # emulated: slower than fp32
    with pytest.raises(DeviceError, match="neither AMX nor AVX-512-bf16.*use --precision fp32"):
        resolve_precision(CPU, "bf16")
    assert resolve_precision(CPU, "fp32") == "fp32"
    with pytest.raises(DeviceError, match="fp16 needs a CUDA device .*use bf16 or fp32"):
        resolve_precision(CPU, "fp16")
    with pytest.raises(DeviceError, match="expected one of fp32, bf16, fp16"):
        resolve_precision(CPU, "fp64")


def test_precisions_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = torch.device("cuda", 0)
    fake_cuda(monkeypatch, 1, bf16=True)
    assert [resolve_precision(gpu, p) for p in ("fp32", "bf16", "fp16")] == ["fp32", "bf16", "fp16"]
    fake_cuda(monkeypatch, 1, bf16=False)
    with pytest.raises(DeviceError, match=r"cuda:0 \(Fake GPU\) has no bfloat16 support"):
        resolve_precision(gpu, "bf16")


def test_autocast_dtypes() -> None:
    assert autocast_dtype("fp32") is None
    assert autocast_dtype("bf16") is torch.bfloat16
    assert autocast_dtype("fp16") is torch.float16


def test_autocast_fp32_is_a_no_op_and_bf16_casts_matmuls_on_cpu() -> None:
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with autocast(CPU, "fp32"):
        assert not torch.is_autocast_enabled("cpu")
        assert (a @ b).dtype == torch.float32
    with autocast(CPU, "bf16"):
        assert torch.is_autocast_enabled("cpu")
        assert (a @ b).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled("cpu")


def test_fp32_turns_tf32_off_inside_and_restores_the_flags() -> None:
    # cuDNN's TF32 default moved the full-size biLM by 1.5e-4 on an H200 (nox -s gpu_smoke).
    saved = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    try:
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
        with autocast(CPU, "fp32"):
            assert not torch.backends.cudnn.allow_tf32
            assert not torch.backends.cuda.matmul.allow_tf32
        assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
        with pytest.raises(RuntimeError), exact_fp32():
            raise RuntimeError("restored on errors too")
        assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def test_scaler_only_for_fp16_on_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    for precision in ("fp32", "bf16"):
        scaler = make_scaler(CPU, precision)
        assert isinstance(scaler, torch.amp.GradScaler) and not scaler.is_enabled()
        assert scaler.state_dict() == {}
    loss = torch.tensor(2.0)
    assert make_scaler(CPU, "fp32").scale(loss) is loss  # a pass-through
    fake_cuda(monkeypatch, 1)
    assert not make_scaler(torch.device("cuda", 0), "bf16").is_enabled()
    assert make_scaler(torch.device("cuda", 0), "fp16").is_enabled()


def test_importing_bilm_does_not_touch_cuda() -> None:
    import subprocess
    import sys

    code = (
        "import torch, bilm, bilm.devices\n"
        "assert not torch.cuda.is_initialized()\n"
        "print(bilm.devices.resolve_device('cpu'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "cpu"
