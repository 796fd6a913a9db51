"""``@record`` (transpiler/ir/records.py) behaves as ``@dataclasses.dataclass`` does for the
options the package uses: the same class built both ways must agree on every observable."""
from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from transpiler.ir.records import field, record

OPTIONS = [dict(), dict(eq=False), dict(eq=False, slots=True), dict(frozen=True), dict(frozen=True, slots=True),
           dict(slots=True)]


def build(decorator, **options):
    @decorator(**options)
    class Base:
        """A base with a defaulted and a factory field."""

        a: int
        b: str = "b"
        c: list = field(default_factory=list)
        hidden: dict = field(default_factory=dict, compare=False, repr=False)

        def total(self) -> int:
            return self.a + len(self.c)

    @decorator(**options)
    class Child(Base):
        d: float = 1.5
        b: str = "child"  # a redefined field keeps its place

    return Base, Child


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_a_record_matches_a_dataclass(options):
    (RBase, RChild), (DBase, DChild) = build(record, **options), build(dataclasses.dataclass, **options)
    for R, D in ((RBase, DBase), (RChild, DChild)):
        assert [(f.name, f.default, f.default_factory, f.repr, f.compare) for f in dataclasses.fields(R)] == \
               [(f.name, f.default, f.default_factory, f.repr, f.compare) for f in dataclasses.fields(D)]
        assert R.__match_args__ == D.__match_args__
        assert ("__slots__" in R.__dict__) == ("__slots__" in D.__dict__)
        assert (R.__hash__ is None) == (D.__hash__ is None)
        r, d = R(3, c=[1, 2]), D(3, c=[1, 2])
        assert repr(r).replace(R.__qualname__, "X") == repr(d).replace(D.__qualname__, "X")
        assert r.total() == d.total() == 5
        assert dataclasses.asdict(r) == dataclasses.asdict(d)
        assert dataclasses.astuple(r) == dataclasses.astuple(d)
        assert dataclasses.is_dataclass(r) and dataclasses.is_dataclass(R)
        # Two distinct instances with equal fields, and one with a field that is not compared.
        assert (r == R(3, c=[1, 2])) == (d == D(3, c=[1, 2]))
        assert (r == R(3, c=[1, 2], hidden={"x": 1})) == (d == D(3, c=[1, 2], hidden={"x": 1}))
        assert r != R(4)
        if options.get("frozen"):
            for obj in (r, d):  # a list field: unhashable in both
                with pytest.raises(TypeError, match="unhashable type: 'list'"):
                    hash(obj)
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'a'"):
                r.a = 9
            with pytest.raises(dataclasses.FrozenInstanceError):
                del r.a
        else:
            r.a = 9
            assert r.a == 9
        changed = dataclasses.replace(r, b="new")
        assert type(changed) is R and changed.b == "new" and changed.c == r.c
        for clone in (copy.copy(r), copy.deepcopy(r)):
            assert dataclasses.astuple(clone) == dataclasses.astuple(r)
    assert [f.name for f in dataclasses.fields(RChild)] == ["a", "b", "c", "hidden", "d"]
    assert RChild(1).b == DChild(1).b == "child"


@record(frozen=True, slots=True)
class FrozenSlots:
    a: int
    b: tuple = (1, 2)


@record(eq=False, slots=True)
class Slots:
    a: int
    b: list = field(default_factory=list)


def test_records_pickle():
    frozen = pickle.loads(pickle.dumps(FrozenSlots(7)))  # restored without the refused setattr
    assert frozen == FrozenSlots(7) and hash(frozen) == hash(FrozenSlots(7))
    plain = pickle.loads(pickle.dumps(Slots(3, [4])))
    assert (plain.a, plain.b) == (3, [4])


def test_factories_give_each_instance_its_own_value():
    @record(eq=False, slots=True)
    class Node:
        items: list = field(default_factory=list)

    one, two = Node(), Node()
    one.items.append(1)
    assert two.items == [] and one is not two and one != two  # eq=False: identity


def test_a_frozen_record_hashes_its_compared_fields():
    @record(frozen=True, slots=True)
    class Key:
        name: str
        bits: int = 32
        note: str = field(default="", compare=False)

    assert hash(Key("f", 32, "x")) == hash(Key("f")) and Key("f", note="y") == Key("f")
    assert {Key("f"): 1}[Key("f", 32)] == 1
    assert Key("f") != Key("f", 16)


def test_methods_a_class_writes_itself_are_kept():
    @record
    class Named:
        x: int

        def __repr__(self) -> str:
            return f"<{self.x}>"

        def __eq__(self, other) -> bool:
            return True

    assert repr(Named(2)) == "<2>" and Named(1) == Named(2)


def test_misuse_is_refused_as_dataclasses_refuses_it():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        @record
        class Order:
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="mutable default .* use default_factory"):
        @record
        class Mutable:
            a: list = []

    with pytest.raises(TypeError, match="init=False / kw_only are not supported; use @dataclass"):
        @record
        class NoInit:
            a: int = field(default=0, init=False)
