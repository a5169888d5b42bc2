"""Devices and numeric precision for training and benchmarks (``--device`` / ``--precision``).

One place that turns the command-line strings into torch objects, so ``python -m bilm pretrain``,
the benchmarks and the harness agree on their meaning and on their error messages::

    from bilm.devices import autocast, make_scaler, resolve_device, resolve_precision

    device = resolve_device("auto")                # cuda (cuda:LOCAL_RANK under torchrun) or cpu
    precision = resolve_precision(device, "bf16")  # validated for that device
    scaler = make_scaler(device, precision)        # a real GradScaler only for fp16 on CUDA
    with autocast(device, precision):
        loss = model(batch)
    scaler.scale(loss).backward()

Device specs: ``auto`` (CUDA when available, else CPU), ``cpu``, ``cuda`` (the current CUDA
device, or ``cuda:LOCAL_RANK`` when a local rank is given), ``cuda:N``.

Precisions: ``fp32`` (no autocast, and no TF32 on CUDA: :func:`exact_fp32`), ``bf16`` (autocast
to bfloat16, CPU or CUDA), ``fp16`` (autocast to float16 with a :class:`torch.amp.GradScaler`;
CUDA only). Parameters, optimizer state and checkpoints stay float32 in every case (mixed
precision, not half-precision weights).

Importing this module has no side effects (it neither initialises CUDA nor reads the
environment); every function looks at ``torch.cuda`` only when called.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Literal, get_args

import torch

from bilm.lstm import cpu_bf16_unit

__all__ = [
    "DEVICE_SPECS",
    "SHARED_CPU_WAIT_POLICY",
    "PRECISIONS",
    "DeviceError",
    "Precision",
    "autocast",
    "autocast_dtype",
    "describe_device",
    "distributed_backend",
    "exact_fp32",
    "make_scaler",
    "openmp_environment",
    "resolve_device",
    "resolve_precision",
    "synchronize",
    "torchrun_local_rank",
]

Precision = Literal["fp32", "bf16", "fp16"]
#: Valid ``--precision`` values, in order of preference for help texts.
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
#: What ``--device`` accepts (``N`` is a CUDA device index).
DEVICE_SPECS = "auto | cpu | cuda | cuda:N"

NO_CUDA = "CUDA is not available (torch built without CUDA or no GPU): use --device cpu"

_DTYPES: dict[str, torch.dtype] = {"bf16": torch.bfloat16, "fp16": torch.float16}

#: OpenMP wait policy for CPUs shared with other processes: idle threads sleep at barriers
#: instead of spinning (docs/performance.md, "On a shared server"; ``nox -s bench_bilm`` measures
#: it idle and loaded).
SHARED_CPU_WAIT_POLICY = "PASSIVE"


class DeviceError(ValueError):
    """A ``--device``/``--precision`` request this machine cannot honour (message says why)."""


def _visible(count: int) -> str:
    return f"only {count} CUDA device{' is' if count == 1 else 's are'} visible"


def resolve_device(
    spec: str | torch.device = "auto", local_rank: int | None = None
) -> torch.device:
    """The torch device meant by a ``--device`` value, checked against this machine.

    Args:
        spec: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` (or a :class:`torch.device` of those types).
        local_rank: this process's rank on its node when it is one of several data-parallel
            processes (torchrun's ``LOCAL_RANK``, see :func:`torchrun_local_rank`). ``auto`` and
            ``cuda`` then mean ``cuda:local_rank`` (one GPU per process); an explicit ``cuda:N``
            is refused, since every rank would share that GPU. ``None`` for one process.

    Returns:
        ``cpu`` or ``cuda:N`` (always with an index, so it can be logged and compared).

    Raises:
        DeviceError: an unknown spec, CUDA asked for but not available, or an index beyond the
            visible devices (e.g. "--device cuda:1 asked for, but only 1 CUDA device is
            visible").
    """
    text = str(spec).strip().lower()
    if text == "cpu":
        return torch.device("cpu")
    if text == "auto":
        if not torch.cuda.is_available():
            return torch.device("cpu")
        text = "cuda"
    kind, _, index_text = text.partition(":")
    if kind != "cuda" or (index_text and not index_text.isdigit()):
        raise DeviceError(f"--device {spec!s}: expected {DEVICE_SPECS}")
    if not torch.cuda.is_available():
        raise DeviceError(NO_CUDA)
    count = torch.cuda.device_count()
    if index_text:
        if local_rank is not None:
            raise DeviceError(
                f"--device {text} would put every data-parallel process on one GPU: "
                "use --device cuda (each process takes cuda:LOCAL_RANK)"
            )
        index = int(index_text)
        if index >= count:
            raise DeviceError(f"--device {text} asked for, but {_visible(count)}")
        return torch.device("cuda", index)
    if local_rank is not None:
        if local_rank >= count:
            raise DeviceError(
                f"local rank {local_rank} needs cuda:{local_rank}, but {_visible(count)} "
                "(start at most one process per GPU, or use --device cpu)"
            )
        return torch.device("cuda", local_rank)
    return torch.device("cuda", torch.cuda.current_device())


def resolve_precision(device: torch.device, precision: str = "fp32") -> Precision:
    """Check that ``precision`` can run on ``device``; returns it typed as :data:`Precision`.

    Raises:
        DeviceError: an unknown precision, ``fp16`` on the CPU (no loss scaling there: use
            ``bf16`` or ``fp32``), ``bf16`` on a GPU without bfloat16 support, or ``bf16`` on
            a CPU without a bf16 multiply unit (AMX or AVX-512-bf16,
            :func:`bilm.lstm.cpu_bf16_unit`), where oneDNN emulates it, slower than fp32.
    """
    if precision not in PRECISIONS:
        raise DeviceError(f"--precision {precision}: expected one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and device.type != "cuda":
        raise DeviceError(
            f"--precision fp16 needs a CUDA device (got {device}); on the CPU use bf16 or fp32"
        )
    if precision == "bf16" and device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise DeviceError(f"--precision bf16: {describe_device(device)} has no bfloat16 support")
    if precision == "bf16" and device.type == "cpu" and cpu_bf16_unit() is None:
        raise DeviceError(
            "--precision bf16: this CPU has neither AMX nor AVX-512-bf16, so bf16 would be "
            "emulated and slower than fp32; use --precision fp32 here"
        )
    return precision  # narrowed to Precision by the membership test above


def autocast_dtype(precision: str) -> torch.dtype | None:
    """The autocast dtype of a precision: ``None`` for fp32, else bfloat16 or float16."""
    return _DTYPES.get(precision)


@contextlib.contextmanager
def exact_fp32() -> Iterator[None]:
    """Float32 arithmetic really in float32 on CUDA: TF32 off for cuDNN and matmuls inside.

    PyTorch lets cuDNN convolutions use TF32 (10-bit mantissa) by default on Ampere and later:
    the full-size biLM's char CNN then moves outputs by 1.5e-4 on an H200 (4e-7 with TF32 off;
    ``nox -s gpu_smoke``). The previous flags are restored on exit; on the CPU nothing changes.
    """
    flags = (torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = flags


def autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager[None]:
    """Context for the forward pass: :class:`torch.autocast` to the precision's dtype, or for
    ``fp32`` :func:`exact_fp32` (the same kernels as without any context on the CPU).

    Run only the forward pass and the loss inside it, not ``backward()`` or the optimizer step.
    """
    dtype = autocast_dtype(precision)
    if dtype is None:
        return exact_fp32()
    return torch.autocast(device_type=device.type, dtype=dtype)


def make_scaler(device: torch.device, precision: str) -> torch.amp.GradScaler:
    """A :class:`torch.amp.GradScaler`, enabled only for ``fp16`` on CUDA.

    A disabled scaler is a pass-through (``scale(x)`` is ``x``, ``step`` is ``optimizer.step``,
    ``state_dict()`` is ``{}``), so training code can call it unconditionally;
    ``scaler.is_enabled()`` tells whether non-finite gradients are expected (the scaler then
    skips the step and lowers its scale) or are an error.
    """
    enabled = precision == "fp16" and device.type == "cuda"
    return torch.amp.GradScaler(device.type, enabled=enabled)


def distributed_backend(device: torch.device) -> str:
    """``torch.distributed`` backend for processes on ``device``: nccl on CUDA, gloo on CPU."""
    return "nccl" if device.type == "cuda" else "gloo"


def torchrun_local_rank(environ: Mapping[str, str] | None = None) -> int | None:
    """``LOCAL_RANK`` when this process is one of several started by torchrun, else ``None``.

    Args:
        environ: the environment to read (default: ``os.environ``).
    """
    env = os.environ if environ is None else environ
    if int(env.get("WORLD_SIZE", "1")) <= 1:
        return None
    return int(env.get("LOCAL_RANK", "0"))


def describe_device(device: torch.device) -> str:
    """A human-readable name for logs: ``cpu`` or ``cuda:0 (NVIDIA H200)``."""
    if device.type != "cuda":
        return str(device)
    try:
        return f"{device} ({torch.cuda.get_device_name(device)})"
    except (RuntimeError, AssertionError):  # pragma: no cover - no driver
        return str(device)


def synchronize(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA is asynchronous); a no-op on the CPU.

    Call before reading a wall clock that should include GPU work.
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def openmp_environment(
    environ: Mapping[str, str] | None = None,
    wait_policy: str | None = SHARED_CPU_WAIT_POLICY,
    threads: int | None = None,
) -> dict[str, str]:
    """The environment for a new process whose OpenMP threads suit a shared CPU machine.

    The OpenMP runtime torch links (GNU libgomp) reads ``OMP_WAIT_POLICY`` once, when torch is
    first imported, so a policy can only be chosen for a process that has not imported torch
    yet: a child process (this function), or the first lines of an entry point before any
    ``import torch``. With the default (unset) policy libgomp's idle threads spin for a while at
    each barrier; the recurrent loop of the biLM runs a dozen small parallel GEMMs per step, so
    when another process takes a core the spinning thread and the one that holds the work
    share it, and every step waits (``nox -s bench_bilm``: "under load").

    Args:
        environ: the environment to start from (default: ``os.environ``); not modified.
        wait_policy: ``"PASSIVE"`` (sleep at barriers), ``"ACTIVE"`` (spin) or ``None`` (leave
            unset: libgomp's default); a policy the user set in ``environ`` is kept.
        threads: also set ``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` (``None``: leave them).

    Returns:
        A new dict for ``subprocess.run(..., env=...)``.

    Raises:
        ValueError: ``wait_policy`` is not PASSIVE, ACTIVE or None, or ``threads < 1``.
    """
    env = dict(os.environ if environ is None else environ)
    if wait_policy is not None:
        policy = wait_policy.strip().upper()
        if policy not in ("PASSIVE", "ACTIVE"):
            raise ValueError(f"wait_policy {wait_policy!r}: expected PASSIVE, ACTIVE or None")
        env.setdefault("OMP_WAIT_POLICY", policy)
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
    return env
