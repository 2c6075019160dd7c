"""Where the models run and at what precision: one rule for the judge and the table encoder.

``device="auto"`` is CUDA when torch sees a GPU, else the CPU. ``precision="auto"`` is bf16
autocast on CUDA and fp32 on the CPU, so nothing changes on a machine without a GPU unless
asked. ``int8`` (the judge only) is dynamic quantisation of linear layers, a CPU option;
``fp16`` is a CUDA option (CPU kernels for it are slow or missing).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

DeviceSetting = Literal["auto", "cpu", "cuda"]
PrecisionSetting = Literal["auto", "fp32", "bf16", "fp16", "int8"]
Precision = Literal["fp32", "bf16", "fp16", "int8"]


class DeviceError(ValueError):
    """A device or precision this machine (or this model) cannot run."""


def resolve_device(setting: str) -> str:
    """``"cuda"`` or ``"cpu"`` (``auto``: CUDA when torch sees one); an explicit ``cuda``
    without a GPU is an error, not a silent fallback."""
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
    raise DeviceError(f"unknown precision {setting!r} (auto, fp32, bf16, fp16, int8)")


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
