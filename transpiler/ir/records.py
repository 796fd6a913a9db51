"""``@record``: ``@dataclasses.dataclass`` for the package's own classes, at a fifth of its
import cost.

The standard decorator compiles two to four small functions per class the moment the class
is defined; over the package's hundred-odd IR nodes, types and tables that was 60 ms of
every ``import transpiler`` and CLI run, a fifth of a cold ``emit``. A record compiles
each of its ``__init__``, ``__eq__`` and ``__hash__`` the first time that method runs: most
classes a run defines are never built, and most it builds are never compared or hashed.
``__repr__`` is one function for every record, and a frozen record's ``__setattr__`` /
``__delattr__`` are closures over its class: neither is compiled. The generated ``__init__`` and
``__eq__`` are the ones dataclasses writes, so building and comparing nodes costs what it did.

A record is a dataclass to the rest of Python: ``dataclasses.fields``, ``replace``,
``asdict`` and ``is_dataclass`` see the same ``Field`` objects. Supported: ``eq``,
``frozen`` and ``slots``, and fields with ``default``, ``default_factory``, ``repr`` and
``compare``; anything else is refused when the class is defined."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError, field

__all__ = ["record", "field"]

_FIELDS = "__dataclass_fields__"


def record(cls: type | None = None, /, *, eq: bool = True, frozen: bool = False,
           slots: bool = False) -> type | Callable[[type], type]:
    """``@record`` / ``@record(eq=False, frozen=True, slots=True)``, as ``@dataclass``."""
    def wrap(c: type) -> type:
        return _make(c, eq, frozen, slots)
    return wrap if cls is None else wrap(cls)


def _make(cls: type, eq: bool, frozen: bool, slots: bool) -> type:
    fields: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, _FIELDS, None) or {})
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        fields[name] = _field(cls, name, annotation)
    _check_order(cls, fields)

    namespace = dict(cls.__dict__)
    if slots:
        if "__slots__" in namespace:
            raise TypeError(f"{cls.__name__} already specifies __slots__")
        inherited = {s for b in cls.__mro__[1:] for s in getattr(b, "__slots__", ())}
        namespace["__slots__"] = tuple(n for n in fields if n not in inherited)
        for name in fields:
            namespace.pop(name, None)  # a default lives in __init__, not as a class attribute
        namespace.pop("__dict__", None)
        namespace.pop("__weakref__", None)
        if frozen:  # pickle and copy restore slots with setattr, which a frozen record refuses
            namespace["__getstate__"], namespace["__setstate__"] = _frozen_getstate, _frozen_setstate
        cls = type(cls)(cls.__name__, cls.__bases__, namespace)
    else:
        for name, f in fields.items():  # as dataclasses leaves them: the plain default, if any
            if name in cls.__dict__:
                if f.default is MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, f.default)

    setattr(cls, _FIELDS, fields)
    cls.__match_args__ = tuple(fields)

    if cls.__dict__.get("__repr__") is None:
        cls.__repr__ = _repr
    if eq:
        explicit_hash = cls.__dict__.get("__hash__") is not None
        if frozen and not explicit_hash:
            cls.__hash__ = _stub(cls, "__hash__", frozen)
        elif not explicit_hash:
            cls.__hash__ = None  # mutable and compared by value: unhashable, as dataclasses has it
    if frozen:
        _freeze(cls, frozenset(fields))
    for name in ("__init__", "__eq__") if eq else ("__init__",):
        if cls.__dict__.get(name) is None:  # a method the class writes itself stays
            setattr(cls, name, _stub(cls, name, frozen))
    return cls


def _frozen_getstate(self: object) -> list:
    return [getattr(self, name) for name in getattr(self, _FIELDS)]


def _frozen_setstate(self: object, state: list) -> None:
    for name, value in zip(getattr(self, _FIELDS), state):
        object.__setattr__(self, name, value)


def _field(cls: type, name: str, annotation: str | object) -> Field:
    default = cls.__dict__.get(name, MISSING)
    f = default if isinstance(default, Field) else field(default=default)
    if isinstance(annotation, str) and annotation.startswith(("ClassVar", "InitVar", "KW_ONLY", "dataclasses.")):
        raise TypeError(f"@record {cls.__name__}.{name}: {annotation} is not supported; use @dataclass")
    if not f.init or f.kw_only is True:
        raise TypeError(f"@record {cls.__name__}.{name}: init=False / kw_only are not supported; use @dataclass")
    if isinstance(f.default, (list, dict, set)):
        raise ValueError(f"mutable default {type(f.default)} for field {name} is not allowed: use default_factory")
    f.name, f.type, f._field_type = name, annotation, dataclasses._FIELD
    return f


def _check_order(cls: type, fields: dict[str, Field]) -> None:
    seen_default = False
    for name, f in fields.items():
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument in {cls.__name__}")
        seen_default = seen_default or has_default


def _repr(self: object) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n, f in getattr(self, _FIELDS).items() if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _freeze(cls: type, names: frozenset) -> None:
    """Frozen: assigning or deleting a field raises, as dataclasses' generated methods do."""
    def __setattr__(self: object, name: str, value: object) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    for fn in (__setattr__, __delattr__):
        if cls.__dict__.get(fn.__name__) is None:
            fn.__qualname__ = f"{cls.__qualname__}.{fn.__name__}"
            setattr(cls, fn.__name__, fn)


def _stub(cls: type, name: str, frozen: bool) -> Callable:
    """A method that compiles the real one on its first call, installs it and runs it in its
    place. Each method on its own: a run builds many classes it never compares or hashes,
    and compiling costs by the line (a class's four methods together took 0.3 ms here)."""
    def first_call(self: object, *args: object, **kwargs: object) -> object:
        if getattr(cls.__dict__.get(name), "__code__", None) is _stub_code:  # not installed by another thread
            fn = _compile(cls, name, frozen)
            fn.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, fn)
        return getattr(cls, name)(self, *args, **kwargs)
    first_call.__name__ = first_call.__qualname__ = name
    return first_call


def _compile(cls: type, method: str, frozen: bool) -> Callable:
    """The generated ``__init__``, ``__eq__`` or ``__hash__`` of ``cls``, as dataclasses writes it."""
    fields = getattr(cls, _FIELDS)
    env: dict = {"MISSING": MISSING, "_object_setattr": object.__setattr__}
    if method == "__init__":
        params, body = [], []
        for n, f in fields.items():
            if f.default_factory is not MISSING:
                env[f"_factory_{n}"] = f.default_factory
                params.append(f"{n}=MISSING")
                value = f"_factory_{n}() if {n} is MISSING else {n}"
            elif f.default is not MISSING:
                env[f"_default_{n}"] = f.default
                params.append(f"{n}=_default_{n}")
                value = n
            else:
                params.append(n)
                value = n
            body.append(f"_object_setattr(self, {n!r}, {value})" if frozen else f"self.{n} = {value}")
        src = [f"def __init__(self, {', '.join(params)}):", *("    " + b for b in body or ["pass"])]
    elif method == "__eq__":
        compared = [n for n, f in fields.items() if f.compare]
        src = ["def __eq__(self, other):",
               "    if other.__class__ is self.__class__:",
               "        return (" + "".join(f"self.{n}," for n in compared) + ") == ("
               + "".join(f"other.{n}," for n in compared) + ")",
               "    return NotImplemented"]
    else:
        hashed = [n for n, f in fields.items() if (f.hash if f.hash is not None else f.compare)]
        src = ["def __hash__(self):", "    return hash((" + "".join(f"self.{n}," for n in hashed) + "))"]
    exec(compile("\n".join(src), f"<record {cls.__qualname__}>", "exec"), env)
    return env[method]


_stub_code = _stub(object, "x", False).__code__
