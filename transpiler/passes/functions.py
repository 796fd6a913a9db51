"""What each ``@qd.real_func`` instantiation needs from the kernel besides its own
arguments: the ndarray parameters it (or a function it calls) reads or writes, and the
extents it uses. A target where kernel parameters are not visible to every function
passes them as extra arguments, in this order, at every call."""
from __future__ import annotations

from ..ir import nodes as ir
from ..ir.memo import per_kernel
from ..ir.walk import all_exprs, all_stmts, references

Input = tuple[ir.Param, "int | None"]  # a parameter (None) or one of its extents (dim)


def _direct(body: list[ir.Stmt]) -> dict[tuple[int, int | None], Input]:
    found: dict[tuple[int, int | None], Input] = {}
    for node in [*all_stmts(body), *all_exprs(body)]:
        if isinstance(node, ir.Shape):
            found[(id(node.array), node.dim)] = (node.array, node.dim)
            continue
        for ref in references(node):
            if isinstance(ref, ir.Param):
                found[(id(ref), None)] = (ref, None)
                # A multi-dimensional element's row-major offset uses the inner extents
                # (those of a vector or matrix element are constants).
                dims = min(len(getattr(node, "indices", ())), ref.type.passed_extents if ref.is_array else 0)
                for dim in range(1, dims):
                    found[(id(ref), dim)] = (ref, dim)
    return found


@per_kernel
def function_inputs(kernel: ir.Kernel) -> dict[str, list[Input]]:
    """Function name -> the kernel parameters and extents it needs, in parameter order."""
    needs = {f.name: _direct(f.body) for f in kernel.functions}
    changed = True
    while changed:  # through calls, to a fixed point (recursion included)
        changed = False
        for f in kernel.functions:
            for callee in f.calls:
                extra = {k: v for k, v in needs[callee].items() if k not in needs[f.name]}
                if extra:
                    needs[f.name].update(extra)
                    changed = True
    return {name: sorted(found.values(), key=lambda pd: (pd[0].index, -1 if pd[1] is None else pd[1]))
            for name, found in needs.items()}
