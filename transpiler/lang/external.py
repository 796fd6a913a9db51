"""PyTorch tensors and DLPack, as Quadrants takes them: a tensor passed where a kernel takes an
ndarray, and ``to_torch`` / ``from_torch`` / ``to_dlpack`` of fields and ndarrays.

PyTorch stays optional: nothing here imports it unless the caller already has (a tensor
argument is a ``torch.Tensor`` only once ``torch`` is in ``sys.modules``) or asks for a
tensor. Fields and ndarrays live in host NumPy memory that every executor copies to and from
its device around a launch, so a CPU tensor or a DLPack capsule can share that memory."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from collections.abc import Callable

from ..ir.types import python_type

if TYPE_CHECKING:
    import numpy as np
    import torch

    from ..ir.types import DType


def has_pytorch() -> bool:
    """Whether ``import torch`` works here (Quadrants' ``qd.lang.util.has_pytorch``)."""
    if "torch" in sys.modules:
        return True
    try:
        import torch  # noqa: F401, PLC0415 - optional: torch
    except ImportError:
        return False
    return True


def is_tensor(value: object) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _host_view(t: torch.Tensor, what: str) -> tuple[np.ndarray, Callable[[], None] | None]:
    """The NumPy array a kernel runs on for tensor ``t``: ``t``'s own memory when it is a
    contiguous CPU tensor; else a contiguous CPU copy, and the write back to ``t`` to run
    after the launch (a CUDA tensor too: this runtime's CUDA executor takes host arrays)."""
    try:
        if t.device.type == "cpu" and t.is_contiguous():
            return t.detach().numpy(), None
        copy = t.detach().cpu().contiguous().numpy()
    except TypeError as exc:  # bfloat16 and the like: no NumPy dtype
        raise TypeError(f"{what}: a torch tensor of {t.dtype} has no NumPy equivalent ({exc}); "
                        f"convert it first, e.g. with .float()") from None

    def write_back() -> None:
        import torch  # noqa: PLC0415 - optional: torch

        t.data.copy_(torch.from_numpy(copy))
    return copy, write_back


def tensor_argument(t: torch.Tensor, what: str) -> tuple[np.ndarray, np.ndarray | None, list[Callable[[], None]]]:
    """(the array for ``t``, the array for its ``.grad`` or None, the write backs after the
    launch). A tensor that requires grad gets a zeroed ``.grad`` if it has none, as in
    Quadrants, so ``kernel.grad()`` has somewhere to accumulate."""
    import torch  # noqa: PLC0415 - optional: torch

    array, back = _host_view(t, what)
    after = [back] if back is not None else []
    grad = None
    if t.requires_grad:
        if t.grad is None:
            t.grad = torch.zeros_like(t)
        if not isinstance(t.grad, torch.Tensor):
            raise ValueError(f"{what}: expecting a torch.Tensor for the gradient, got {type(t.grad).__name__}")
        grad, back = _host_view(t.grad, what)
        if back is not None:
            after.append(back)
    return array, grad, after


def as_tensor(array: np.ndarray, device: str | torch.device | None = None) -> torch.Tensor:
    """A tensor with ``array``'s elements: its memory on the CPU, a copy on another device."""
    import torch  # noqa: PLC0415 - optional: torch

    t = torch.from_numpy(array)
    return t if device is None or torch.device(device).type == "cpu" else t.to(device)


def to_torch(array: np.ndarray, device: str | torch.device | None, copy: bool | None, shared: bool,
             what: str) -> torch.Tensor:
    """``to_torch(device, copy=)`` of host memory ``array``: ``copy=True`` an independent copy;
    ``copy=False`` the memory itself (an error where it cannot be shared: a device tensor, or an
    ndarray the executor keeps on its device); ``copy=None`` shared where it can be."""
    import torch  # noqa: PLC0415 - optional: torch

    on_cpu = device is None or torch.device(device).type == "cpu"
    if copy is not True and shared and on_cpu:
        return torch.from_numpy(array)
    if copy is False:
        where = "on this executor" if on_cpu else f"to {device}"
        raise ValueError(f"{what}.to_torch(copy=False): zero-copy is not possible {where}; "
                         f"use copy=True (the default) or copy=None")
    return as_tensor(array.copy(), device)


def from_torch(t: torch.Tensor) -> np.ndarray:
    """A tensor's elements as a NumPy array (a copy where it is not a contiguous CPU tensor)."""
    return t.detach().cpu().contiguous().numpy()


def to_dlpack(array: np.ndarray, versioned: bool = False) -> object:
    """A DLPack capsule of ``array``'s memory: v0 (``"dltensor"``, what
    ``torch.utils.dlpack.from_dlpack`` takes) unless ``versioned``."""
    if versioned:
        return array.__dlpack__(max_version=(1, 0))
    return array.__dlpack__()


def to_pytorch_type(dtype: DType | type) -> torch.dtype:
    """The torch dtype of a qd dtype (Quadrants' ``qd.lang.util.to_pytorch_type``)."""
    import torch  # noqa: PLC0415 - optional: torch

    t = python_type(dtype) or dtype
    name = {"bool": "bool", "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
            "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}
    return getattr(torch, name[t.name])


def to_numpy_type(dtype: DType | type) -> type[np.generic]:
    """The NumPy dtype of a qd dtype (Quadrants' ``qd.lang.util.to_numpy_type``)."""
    t = python_type(dtype) or dtype
    return t.np_dtype.type
