"""A kernel's derivative: its IR differentiated (transpiler/passes/autodiff.py), with a
parameter for each adjoint (or tangent) it reads and writes: a field's ``.grad`` /
``.dual`` (a field parameter bound to it), an ndarray argument's (bound to the argument's at
each call), a kernel-scope variable's (a zeroed buffer of the kernel's own)."""
from __future__ import annotations

import dataclasses

from ..ir import nodes as ir
from ..passes import autodiff


def derive(kernel: ir.Kernel, mode: str) -> ir.Kernel:
    kind = "grad" if mode == "reverse" else "dual"
    added: list[ir.Param] = []
    made: dict[int, ir.Param | None] = {}
    bindings = dict(kernel.bindings)
    taken = {p.name for p in kernel.params}

    def name(base: str) -> str:
        out, k = base, 1
        while out in taken:
            out, k = f"{base}_{k}", k + 1
        taken.add(out)
        return out

    def companion(p: ir.Param) -> ir.Param | None:
        if id(p) in made:
            return made[id(p)]
        c = None
        if p.role == "field":
            other = getattr(kernel.bindings.get(p.name), "__dict__", {}).get("_" + kind)
            if other is not None and other.placed:
                c = ir.Param(name(f"{p.name}_{kind}"), p.type, -1, p.loc, role="field")
                bindings[c.name] = other
        elif p.role == "arg" and p.is_array and p.differentiable:
            c = ir.Param(name(f"{p.name}_{kind}"), p.type, -1, p.loc, role=kind, of=p.name)
        elif p.role == "scratch":
            c = ir.Param(name(f"{p.name}_{kind}"), p.type, -1, p.loc, role="scratch")
        made[id(p)] = c
        if c is not None:
            added.append(c)
        return c

    derived = (autodiff.reverse if mode == "reverse" else autodiff.forward)(kernel, companion)
    params = kernel.params + added
    for k, p in enumerate(params):
        if p.hidden:
            p.index = k
    return dataclasses.replace(derived, params=params, bindings=bindings)
