"""``qd.Tensor``, the annotation and type that a field and an ndarray both are, as Quadrants'
wrapper: in a module of its own, below the storage (lang/field.py) that names it and the
``qd.types`` namespace that exports it."""
from __future__ import annotations

from typing import Any, TypeVar

from .kernel import _NdarrayFactory

_T = TypeVar("_T")


class _TensorType(type):
    """The type of ``qd.Tensor``: a class, so that ``isinstance(x, qd.Tensor)`` holds for a
    field or an ndarray, as it does for Quadrants' wrapper; called or subscripted, an ndarray
    annotation, as ``qd.types.ndarray``."""

    _factory = _NdarrayFactory()

    def __instancecheck__(cls, obj: object) -> bool:
        return hasattr(type(obj), "_unwrap")

    def __call__(cls, *args, **kwargs):
        if len(args) == 1 and not kwargs and hasattr(type(args[0]), "_unwrap"):
            return args[0]  # Quadrants' qd.Tensor(x) wrapper of a field or an ndarray: here x itself
        return cls._factory(*args, **kwargs)

    def __getitem__(cls, item: Any):
        return cls._factory[item]

    def __repr__(cls) -> str:
        return "qd.Tensor"


class Tensor(metaclass=_TensorType):
    """``qd.Tensor``: as an annotation, a field or an ndarray (typed by the call)."""

    _qd_tensor_annotation = True


def is_tensor(obj: object) -> bool:
    """``qd.is_tensor(x)``: whether ``x`` is a field or an ndarray."""
    return isinstance(obj, Tensor)


def wrap(impl: _T) -> _T:
    """``qd.wrap(x)``: Quadrants' Tensor wrapper of a field or an ndarray, which is ``x`` here."""
    if not hasattr(type(impl), "_unwrap"):
        raise TypeError(f"qd.wrap() takes a field or an ndarray, got {type(impl).__name__}")
    return impl
