"""``qd.ad``: automatic differentiation as Quadrants spells it. ``kernel.grad(*args)`` runs
the kernel's reverse-mode derivative (transpiler/passes/autodiff.py); ``qd.ad.Tape(loss)``
records the kernels called in its block and runs their derivatives backwards on exit;
``qd.ad.FwdMode(loss, param, seed)`` makes the kernels called in its block carry tangents
into ``.dual``; ``grad_replaced`` / ``grad_for`` / ``no_grad`` give a Python function a
gradient of the user's own."""
from __future__ import annotations

import functools
import math
import warnings

from .external import is_tensor
from .field import Field, current_program_fields
from .kernel import Kernel, set_autodiff

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

    import torch

    from .types import Tensor


class _State:
    tape: Tape | None = None
    replaced = 0            # inside a grad_replaced function: its kernels are not recorded
    fwd: FwdMode | None = None


state = _State()


def _companions(kind: str):
    for f in current_program_fields():
        c = f.__dict__.get("_" + kind)
        if c is not None and c.placed:
            yield c


def clear_all_gradients(gradient_type: str | None = None) -> None:
    """Every field's ``.grad`` (``gradient_type="dual"``: ``.dual``) set to zero (the fields
    made since the last qd.init, as Quadrants' program holds them)."""
    kind = "dual" if str(gradient_type).lower().endswith("dual") else "grad"
    for c in _companions(kind):
        c.storage()[...] = 0


def _is_loss_scalar(loss: Tensor) -> bool:
    return math.prod(loss.shape) == 1


class Tape:
    """``with qd.ad.Tape(loss=y): f(); g()``: on exit ``y.grad`` is 1 and ``g.grad()``,
    ``f.grad()`` have run (with the arguments of each call), so every ``.grad`` holds the
    derivative of ``y``. Entering clears every gradient (``clear_gradients=False`` keeps
    them) and zeroes ``y``."""

    def __init__(self, loss: Tensor | torch.Tensor | None = None, clear_gradients: bool = True,
                 validation: bool = False, grad_check: object = None):
        self.loss = loss
        self.clear_gradients = clear_gradients
        self.calls: list = []
        self.entered = False
        self.evaluated = False
        if validation or grad_check:
            warnings.warn("qd.ad.Tape(validation=..., grad_check=...): this transpiler does not check the global data "
                          "access rule or gradients numerically; the tape records and differentiates as usual",
                          stacklevel=2)

    def __enter__(self) -> Tape:
        if self.entered:
            raise RuntimeError("Tape can be entered only once.")
        self.entered = True
        if is_tensor(self.loss):  # a torch tensor: its .grad is the loss's gradient
            import torch  # noqa: PLC0415 - torch only for a tensor loss, which means torch is loaded

            if self.loss.numel() != 1:
                raise RuntimeError("The loss of `Tape` must be a tensor only contains one element")
            if not self.loss.requires_grad:
                raise RuntimeError("Gradients of loss are not allocated, please set requires_grad=True for all "
                                   "tensors that are required by autodiff.")
            with torch.no_grad():
                self.loss.fill_(0.0)
        elif self.loss is not None:
            ndarray = not isinstance(self.loss, Field)
            if not _is_loss_scalar(self.loss):
                raise RuntimeError("The loss of `Tape` must be an ndarray with only one element" if ndarray else
                                   "The loss of `Tape` must be a 0-D field, i.e. scalar")
            if self.loss.__dict__.get("_grad") is None:
                raise RuntimeError(
                    "Gradients of loss are not allocated, please set needs_grad=True for all ndarrays that are "
                    "required by autodiff." if ndarray else
                    "Gradients of loss are not allocated, please use qd.field(..., needs_grad=True) "
                    "for all fields that are required by autodiff.")
            if self.clear_gradients:
                clear_all_gradients()
            self.loss.fill(0.0)
        state.tape = self
        return self

    def insert(self, func: Callable, args: tuple) -> None:
        self.calls.append((func, args))

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        state.tape = None
        if kind is None and self.loss is not None:
            self.grad()

    def grad(self) -> None:
        if not self.entered:
            raise RuntimeError("Before evaluating gradients tape must be entered.")
        if self.evaluated:
            raise RuntimeError("Gradients of grad can be evaluated only once.")
        if not is_tensor(self.loss):
            self.loss.grad.fill(1.0)
        elif self.loss.grad is None:
            import torch  # noqa: PLC0415 - torch only for a tensor loss, which means torch is loaded

            self.loss.grad = torch.ones_like(self.loss)
        else:
            self.loss.grad.data.fill_(1.0)
        for func, args in reversed(self.calls):
            grad = getattr(func, "grad", None)
            if grad is not None:
                grad(*args)
        self.evaluated = True


class FwdMode:
    """``with qd.ad.FwdMode(loss=y, param=x, seed=[...]):`` kernels called in the block run
    their forward-mode derivative: ``y.dual`` gets the derivative of ``y`` along ``seed``
    (a flat list of ``x``'s size; ``[1.0]`` for a 0-d ``x``)."""

    def __init__(self, loss: Tensor | Sequence[Tensor], param: Tensor, seed: Sequence[float] | None = None,
                 clear_gradients: bool = True):
        self.loss = loss if isinstance(loss, (list, tuple)) else [loss]
        self.param = param
        self.seed = seed
        self.clear_gradients = clear_gradients
        self.entered = False

    def __enter__(self) -> FwdMode:
        if self.entered:
            raise RuntimeError("Forward mode manager can be entered only once.")
        self.entered = True
        size = math.prod(self.param.shape)
        if not self.seed:
            if size != 1:
                raise RuntimeError("`seed` is not set for non 0-D field, please specify. `seed` is a list to specify "
                                   "which parameters the computed derivatives respect to.")
            self.seed = [1.0]
        elif len(self.seed) != size:
            raise ValueError(f"`seed` has {len(self.seed)} values; the parameter has {size}")
        if self.clear_gradients:
            clear_all_gradients("dual")
        dual = self.param.dual.storage()
        dual[...] = 0
        if len(self.seed) == 1:
            dual.reshape(-1)[0] = self.seed[0]
        else:
            dual.reshape(-1)[:] = self.seed
        state.fwd = self
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        state.fwd = None
        self.param.dual.storage()[...] = 0


def grad_replaced(func: Callable) -> Callable:
    """A Python function whose gradient is the one ``@qd.ad.grad_for(func)`` gives: a Tape
    records a call of it (not the kernels it calls) and runs that gradient."""

    @functools.wraps(func)
    def decorated(*args, **kwargs):
        if state.tape is not None and not state.replaced:
            state.tape.insert(decorated, args)
        state.replaced += 1
        try:
            return func(*args, **kwargs)
        finally:
            state.replaced -= 1

    decorated.grad = None
    return decorated


def grad_for(primal: Callable) -> Callable[[Callable], Callable]:
    """``@qd.ad.grad_for(f)``: this function is the gradient of ``f`` (``@grad_replaced``)."""

    def decorator(func: Callable) -> Callable:
        if not hasattr(primal, "grad"):
            raise RuntimeError(f"Primal function `{primal.__name__}` must be decorated by qd.ad.grad_replaced")
        if primal.grad is not None:
            raise RuntimeError("Primal function must be a **python** function instead of a quadrants kernel. Please "
                               "wrap the quadrants kernel in a @qd.ad.grad_replaced decorated python function instead.")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            func(*args, **kwargs)

        primal.grad = decorated
        return decorated

    return decorator


def no_grad(func: Callable) -> Callable:
    """A Python function with no gradient: a Tape records it, and does nothing for it."""
    decorated = grad_replaced(func)
    decorated.grad = lambda *args, **kwargs: None
    return decorated


def record(kernel: Callable, args: tuple) -> None:
    """A kernel call in a Tape's block (kernels a grad_replaced function calls aside)."""
    if state.tape is not None and not state.replaced:
        state.tape.insert(kernel, args)


def _call(kernel: Kernel, args: tuple) -> Kernel:
    """What a kernel call launches: in a qd.ad.FwdMode block, the primal with its tangents;
    else the kernel, recorded on the open Tape."""
    if state.fwd is not None:
        return kernel._derivative("forward")
    record(kernel, args)
    return kernel


set_autodiff(_call)


__all__ = ["Tape", "FwdMode", "clear_all_gradients", "grad_replaced", "grad_for", "no_grad"]
