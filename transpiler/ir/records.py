"""``@record``: ``@dataclasses.dataclass`` for the package's own classes, at a fifth of its
import cost.

The standard decorator compiles two to four small functions per class the moment the class
is defined; over the package's hundred-odd IR nodes, types and tables that was 60 ms of
every ``import transpiler`` and CLI run, a fifth of a cold ``emit``. A record compiles its
methods together, once, the first time one of them runs: most classes a run defines are
never built, printed or compared by that run. The generated ``__init__`` is the one
dataclasses writes, so building nodes costs what it did.

A record is a dataclass to the rest of Python: ``dataclasses.fields``, ``replace``,
``asdict`` and ``is_dataclass`` see the same ``Field`` objects. Supported: ``eq``,
``frozen`` and ``slots``, and fields with ``default``, ``default_factory``, ``repr`` and
``compare``; anything else is refused when the class is defined."""
from __future__ import annotations

import dataclasses
from dataclasses import MISSING, Field, FrozenInstanceError, field

__all__ = ["record", "field"]

_FIELDS = "__dataclass_fields__"


def record(cls: type | None = None, /, *, eq: bool = True, frozen: bool = False, slots: bool = False):
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

    methods = ["__init__", "__repr__"]
    if eq:
        methods.append("__eq__")
        explicit_hash = cls.__dict__.get("__hash__") is not None
        if frozen and not explicit_hash:
            methods.append("__hash__")
        elif not explicit_hash:
            cls.__hash__ = None  # mutable and compared by value: unhashable, as dataclasses has it
    if frozen:
        methods += ["__setattr__", "__delattr__"]
    for name in methods:
        if cls.__dict__.get(name) is None or name == "__hash__":  # a method the class writes itself stays
            setattr(cls, name, _stub(cls, name, eq, frozen))
    return cls


def _frozen_getstate(self) -> list:
    return [getattr(self, name) for name in getattr(self, _FIELDS)]


def _frozen_setstate(self, state: list) -> None:
    for name, value in zip(getattr(self, _FIELDS), state):
        object.__setattr__(self, name, value)


def _field(cls: type, name: str, annotation) -> Field:
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


def _stub(cls: type, name: str, eq: bool, frozen: bool):
    """A method that compiles the class's real methods on its first call, installs them and
    runs the real one in its place."""
    def first_call(self, *args, **kwargs):
        _compile(cls, eq, frozen)
        return getattr(cls, name)(self, *args, **kwargs)
    first_call.__name__ = first_call.__qualname__ = name
    return first_call


def _compile(cls: type, eq: bool, frozen: bool) -> None:
    fields = getattr(cls, _FIELDS)
    names = list(fields)
    env: dict = {"MISSING": MISSING, "FrozenInstanceError": FrozenInstanceError, "_cls": cls,
                 "_object_setattr": object.__setattr__}
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

    shown = ", ".join(f"{n}={{self.{n}!r}}" for n, f in fields.items() if f.repr)
    src += ["def __repr__(self):", f"    return f'{{type(self).__qualname__}}({shown})'"]

    compared = [n for n, f in fields.items() if f.compare]
    as_tuple = "(" + "".join(f"self.{n}," for n in compared) + ")"
    other_tuple = "(" + "".join(f"other.{n}," for n in compared) + ")"
    if eq:
        src += ["def __eq__(self, other):",
                "    if other.__class__ is self.__class__:",
                f"        return {as_tuple} == {other_tuple}",
                "    return NotImplemented"]
        if frozen:
            hashed = [n for n, f in fields.items() if (f.hash if f.hash is not None else f.compare)]
            src += ["def __hash__(self):",
                    "    return hash((" + "".join(f"self.{n}," for n in hashed) + "))"]
    if frozen:
        src += ["def __setattr__(self, name, value):",
                "    if type(self) is _cls or name in _names:",
                "        raise FrozenInstanceError(f'cannot assign to field {name!r}')",
                "    super(_cls, self).__setattr__(name, value)",
                "def __delattr__(self, name):",
                "    if type(self) is _cls or name in _names:",
                "        raise FrozenInstanceError(f'cannot delete field {name!r}')",
                "    super(_cls, self).__delattr__(name)"]
        env["_names"] = frozenset(names)
    exec(compile("\n".join(src), f"<record {cls.__qualname__}>", "exec"), env)
    for method in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        current = cls.__dict__.get(method)
        if getattr(current, "__code__", None) is not None and current.__code__ is _stub_code:
            fn = env[method]
            fn.__qualname__ = f"{cls.__qualname__}.{method}"
            setattr(cls, method, fn)


_stub_code = _stub(object, "x", False, False).__code__
