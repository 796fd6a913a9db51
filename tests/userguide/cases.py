"""The user-guide corpus: kernels written the way Quadrants' user guide and Taichi's ndarray
examples write them (our own, modelled on those pages), each with the arguments it runs with
and a NumPy check of what it computes. tests/test_userguide.py translates every kernel for
every target, compiles each with its real toolchain and runs it on every executor.

A case is registered with ``@case(kernel)`` on a function that takes a NumPy random
generator and returns ``(args, check)``: the kernel's arguments, and a function called with
the kernel's return value that asserts on the arrays the kernel wrote. ``needs`` names the
target capabilities the kernel uses (``Capabilities`` fields): it is translated for the
targets that have them."""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

CASES: list[Case] = []


@dataclass
class Case:
    kernel: object
    setup: Callable   # rng -> (args tuple, check(returned))
    module: str
    needs: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.module}.{self.kernel.__name__}"


def case(kernel, needs: tuple[str, ...] = ()):
    def register(setup: Callable) -> Callable:
        CASES.append(Case(kernel, setup, setup.__module__.rsplit(".", 1)[-1], needs))
        return setup

    return register
