"""What a name the language does not have means: a Quadrants spelling not supported yet
(named as such, with what to use instead), a near miss of one that exists ("did you mean"),
or simply unknown. Used by ``qd.<name>``, ``qd.simt.<scope>.<name>`` and the frontend."""
from __future__ import annotations

import importlib
from collections.abc import Iterable

# Quadrants names this package does not provide yet, grouped by what to do instead.
_LATER = {
    "is not supported yet: use qd.field or qd.ndarray":
        "Field ScalarField MatrixField StructField VectorNdarray MatrixNdarray ScalarNdarray VectorTensor "
        "MatrixTensor FieldsBuilder BitpackedFields",
    "is not supported yet: use the method or qd.math's function (v.dot(w), qd.math.cross(a, b), v.norm())":
        "dot cross",
}
_NEVER = ("is not supported by this transpiler (it has no equivalent in the CUDA, HIP, GLSL and Metal "
          "source it writes)")
_UNSUPPORTED = {name: why for why, names in _LATER.items() for name in names.split()}
_NO_EQUIVALENT = set("""
    sparse mesh_local
    mesh_patch_idx Mesh MeshInstance checkpoint
    stop_grad
    interop tools experimental
    pyfunc python dump_compile_config
    set_logging_level is_logging_effective get_addr
    Format quant BufferViewType
""".split())


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest existing name to a near miss (``sqrtt`` -> ``sqrt``), if one is close."""
    import difflib  # noqa: PLC0415 - only when a name is missing: a cost every run would pay

    found = difflib.get_close_matches(name, [c for c in candidates if not c.startswith("_")], n=1, cutoff=0.75)
    return found[0] if found else None


def missing(owner: str, name: str, candidates: Iterable[str]) -> str:
    """Why ``owner.name`` does not exist, in words a user can act on."""
    if name in _UNSUPPORTED:
        why = _UNSUPPORTED[name]
        return f"{owner}.{name} {why}" if why.startswith("is ") else f"{owner}.{name}: {why}"
    if name in _NO_EQUIVALENT:
        return f"{owner}.{name} {_NEVER}"
    if name.startswith("__"):  # Python's own probes (`from m import x` asks for __path__): no typo to mend
        return f"{owner} has no `{name}`"
    close = did_you_mean(name, candidates)
    return f"{owner} has no `{name}`" + (f"; did you mean {owner}.{close}?" if close else "")


class Namespace:
    """``qd.simt.block`` and its kind: attributes set once; a missing one says why."""

    def __init__(self, owner: str, lazy: dict[str, str] | None = None, **members):
        self.__dict__["_owner"] = owner
        self.__dict__["_lazy"] = lazy or {}  # name -> the module that defines it, imported on first use
        self.__dict__.update(members)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._lazy:
            value = self.__dict__[name] = getattr(importlib.import_module(self._lazy[name]), name)
            return value
        raise AttributeError(missing(self._owner, name, [*self.__dict__, *self._lazy]))

    def __repr__(self) -> str:
        return f"<{self._owner}>"
