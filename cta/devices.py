"""Where the models run and at what precision: one rule for the judge and the table encoder.

``device="auto"`` is CUDA when torch sees a GPU, else the CPU. ``precision="auto"`` is bf16
autocast on CUDA and fp32 on the CPU: on a CPU, fp32 is the reference every figure and golden
output is measured with, so the same input gives the same bytes on every CPU. ``fastest``
picks by what the CPU can do: bf16 where it has bfloat16 instructions (AVX-512 BF16 or AMX),
else int8 (the judge re-checks it in fp32 near the thresholds; measured 1.29× fp32 on an
AVX2-only EPYC, where bf16 ran at 0.16×); verdicts then agree with fp32 on ≥ 99 % of pairs,
not all. ``int8`` (the judge only) is dynamic quantisation of linear layers, a CPU option;
``fp16`` is a CUDA option (CPU kernels for it are slow or missing). An explicit ``bf16`` on a
CPU without bfloat16 instructions runs (emulated, slowly) and warns once.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

DeviceSetting = Literal["auto", "cpu", "cuda"]
PrecisionSetting = Literal["auto", "fastest", "fp32", "bf16", "fp16", "int8"]
Precision = Literal["fp32", "bf16", "fp16", "int8"]

log = logging.getLogger(__name__)
# Instruction sets that matter to the models' speed on a CPU (named beside benchmark figures).
CPU_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
_warned: set[str] = set()


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (``/proc/cpuinfo``; empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="ignore") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_features() -> list[str]:
    """Which of :data:`CPU_FEATURES` this CPU has."""
    flags = cpu_flags()
    return [f for f in CPU_FEATURES if f in flags]


def cpu_has_bf16() -> bool:
    """Whether the CPU computes bfloat16 natively (AVX-512 BF16 or AMX tiles)."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags())


class DeviceError(ValueError):
    """A device or precision this machine (or this model) cannot run."""


def cuda_possible() -> bool:
    """Whether this machine could have a CUDA GPU at all (an NVIDIA driver is loaded)."""
    return Path("/proc/driver/nvidia").exists() or Path("/dev/nvidia0").exists()


def resolve_device(setting: str) -> str:
    """``"cuda"`` or ``"cpu"`` (``auto``: CUDA when torch sees one); an explicit ``cuda``
    without a GPU is an error, not a silent fallback. Without an NVIDIA driver ``auto`` is
    the CPU, answered without importing torch (seconds a command need not pay)."""
    if setting == "auto" and not cuda_possible():
        return "cpu"
    import torch

    if setting == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if setting == "cuda" and not torch.cuda.is_available():
        raise DeviceError("device 'cuda' was asked for but torch sees no CUDA GPU")
    if setting not in ("cpu", "cuda"):
        raise DeviceError(f"unknown device {setting!r} (auto, cpu, cuda)")
    return setting


def resolve_precision(setting: str, device: str, allow_int8: bool = True) -> Precision:
    """The precision a model runs at on ``device`` (see the module docstring)."""
    if setting == "auto":
        return "bf16" if device == "cuda" else "fp32"
    if setting == "fastest":
        if device == "cuda":
            return "bf16"
        return "bf16" if cpu_has_bf16() else ("int8" if allow_int8 else "fp32")
    if setting == "bf16" and device == "cpu" and not cpu_has_bf16() and "bf16" not in _warned:
        _warned.add("bf16")
        log.warning(
            "bf16 was asked for on a CPU without bfloat16 instructions (%s): it runs emulated, "
            "often slower than fp32; precision 'fastest' picks what this CPU runs best",
            ", ".join(cpu_features()) or "none of " + ", ".join(CPU_FEATURES),
        )
    if setting == "int8":
        if not allow_int8:
            raise DeviceError(
                "int8 quantisation is a judge option; the encoder runs fp32/bf16/fp16"
            )
        if device != "cpu":
            raise DeviceError("int8 dynamic quantisation runs on the CPU; on CUDA use bf16 or fp16")
        return "int8"
    if setting == "fp16" and device != "cuda":
        raise DeviceError("fp16 runs on CUDA; on the CPU use fp32, bf16 or int8")
    if setting in ("fp32", "bf16", "fp16"):
        return setting  # type: ignore[return-value]
    raise DeviceError(f"unknown precision {setting!r} (auto, fastest, fp32, bf16, fp16, int8)")


def torch_dtype(precision: Precision) -> torch.dtype | None:
    """The autocast dtype of a precision (None: run as stored, fp32 or quantised)."""
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)


@contextlib.contextmanager
def autocast(device: str, precision: Precision) -> Iterator[None]:
    """``torch.autocast`` for bf16/fp16, nothing for fp32 and int8."""
    import torch

    dtype = torch_dtype(precision)
    if dtype is None:
        yield
        return
    with torch.autocast(device_type=device, dtype=dtype):
        yield
