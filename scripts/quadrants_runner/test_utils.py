"""Stands in for Quadrants' ``tests/test_utils.py`` when its test files run against this
project (scripts/quadrants_tests.py copies it over theirs): the same names, written here.

One pytest process runs one executor (``QDT_EXECUTOR``), which plays one Quadrants arch:
cpu-cuda plays ``cuda``, cpu-hip ``amdgpu``, vulkan ``vulkan``. ``test(arch=...)`` runs a test
there when that arch is among the ones it asks for (and not excluded); a test only for the host
CPU (``arch=qd.cpu``, ``get_host_arch_list()``) runs on cpu-cuda as ``x64``, as the CPU
executor is this project's CPU backend. ``require=`` extensions are what qd.is_extension_enabled
says (the same on all three executors: transpiler/lang/extension.py).
"""
from __future__ import annotations

import copy
import os
import platform
import tempfile

import numpy as np  # noqa: F401 - test files reach numpy through this module at times
import pytest

import quadrants as qd

EXECUTOR = os.environ.get("QDT_EXECUTOR", "cpu-cuda")
ROLE = {"cpu-cuda": "cuda", "cpu-hip": "amdgpu", "vulkan": "vulkan"}[EXECUTOR]
HOST = ("cpu", "x64", "arm64")
GPU = ("cuda", "amdgpu", "metal", "vulkan")


def supports(arch: str, extension: str) -> bool:
    return qd.is_extension_enabled(extension)


def _archs(value) -> set[str]:
    """Arch names, ``gpu`` spread into the GPU archs and any host CPU arch into all three."""
    out = set()
    for a in value if isinstance(value, (list, tuple, set)) else [value]:
        out.update(GPU if str(a) == "gpu" else HOST if str(a) in HOST else [str(a)])
    return out


def expected_archs() -> list:
    return [getattr(qd, ROLE)]


def _excluded(role: str, exclude) -> bool:
    for item in exclude if isinstance(exclude, (list, tuple)) else [exclude]:
        pair = tuple(item) if isinstance(item, (list, tuple)) else (item,)
        want_arch, want_sys = pair if len(pair) == 2 else (pair[0], None)
        if (want_arch is None or role in _archs(want_arch)) and (want_sys is None or want_sys == platform.system()):
            return True
    return False


def test(arch=None, exclude=None, require=None, **options):
    """Parametrize a test with the arch this executor plays (``req_arch``) and its qd.init
    options (``req_options``), or skip it when it does not apply here."""
    wanted = _archs(arch) if arch not in (None, [], ()) else {*GPU, *HOST}
    role = ROLE if ROLE in wanted else "x64" if EXECUTOR == "cpu-cuda" and wanted & set(HOST) else None
    required = require if isinstance(require, (list, tuple)) else ([require] if require is not None else [])
    if role is None:
        mark = pytest.mark.skip(reason=f"not for {ROLE}")
    elif _excluded(role, exclude or []):
        mark = pytest.mark.skip(reason=f"excluded on {role}")
    elif not all(supports(role, e) for e in required):
        mark = pytest.mark.skip(reason=f"needs {', '.join(map(str, required))}")
    else:
        mark = pytest.mark.parametrize("req_arch,req_options", [(getattr(qd, role), copy.deepcopy(options))],
                                       ids=[f"arch={role}"])

    def decorator(func):
        func.__qd_test__ = True
        return mark(func)

    return decorator


def get_rel_eps() -> float:
    return 1e-6


def approx(expected, **kwargs):
    if isinstance(expected, bool):
        return _Truth(expected)
    kwargs["rel"] = max(kwargs.get("rel", 1e-6), get_rel_eps())
    return pytest.approx(expected, **kwargs)


class _Truth:
    def __init__(self, value: bool):
        self.value = value

    def __eq__(self, other) -> bool:
        return bool(other) == self.value

    def __ne__(self, other) -> bool:
        return bool(other) != self.value


def allclose(x, y, **kwargs) -> bool:
    return x == approx(y, **kwargs)


def mkdir_p(path: str) -> None:
    os.makedirs(path, exist_ok=True)


def make_temp_file(*args, **kwargs) -> str:
    fd, name = tempfile.mkstemp(*args, **kwargs)
    os.close(fd)
    return name


def skip_if_f64_unsupported(dtype) -> None:
    """Their Vulkan skips f64; lavapipe has it, so nothing is skipped here."""


def torch_op(*, output_shapes=((1,),), output_dtype=None):
    def inner(f):
        import torch  # noqa: PLC0415

        out_dtype = torch.double if output_dtype is None else output_dtype

        class Op(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *inputs):
                outputs = tuple(torch.zeros(s, dtype=out_dtype, requires_grad=True) for s in output_shapes)
                f(*inputs, *outputs)
                ctx.save_for_backward(*inputs, *outputs)
                return outputs

            @staticmethod
            def backward(ctx, *grads):
                inputs = ctx.saved_tensors[: -len(grads)]
                outputs = ctx.saved_tensors[-len(grads):]
                for i in inputs:
                    i.grad.fill_(0)
                for o, g in zip(outputs, grads):
                    o.grad = g
                f.grad(*inputs, *outputs)
                return tuple(i.grad for i in inputs)

        return lambda *args, **kwargs: Op.apply(*args, **kwargs)

    return inner
