"""Conversions and struct values as Quadrants has them.

- A float stored, assigned, returned or passed where an integer is wanted is truncated
  toward zero, with a located warning (Quadrants: "Assign may lose precision"), not refused.
- Vector and struct constructors cast their arguments to the members' types, silently.
- A scalar given for a struct member is that struct's first argument: ``mystruct(1)`` has
  ``line = line3f(1)``, so ``line.linedir`` is (1, 1, 1) and ``line.length`` 0.
- In Python scope a struct type builds a typed value, and a struct field's element is a
  view that writes through (``x[i].b = 1``, ``x[i].line = y[i]``).

Every kernel runs on Vulkan and the CPU executors against NumPy and compiles with every
target's toolchain."""
import re
import warnings

import numpy as np
import pytest

import transpiler as qd

from conftest import assert_compiles, target_names

ivec = qd.types.ndarray(dtype=qd.i32, ndim=1)
fvec = qd.types.ndarray(dtype=qd.f32, ndim=1)


@qd.kernel
def store_truncates(a: ivec, b: fvec):
    for i in range(a.shape[0]):
        a[i] = b[i] * 2.0


@qd.kernel
def local_truncates(a: fvec, out: ivec):
    for i in range(a.shape[0]):
        acc = 0
        acc += a[i]
        acc += a[i] * 3.0
        out[i] = acc


@qd.real_func
def add_f(a: qd.f32, b: qd.f32) -> qd.f32:
    return a + b


@qd.kernel
def return_truncates(x: qd.f32) -> qd.i32:
    return add_f(x, 2)


def lines_of(kernel, *needles) -> list[int]:
    src = kernel.fn.__code__.co_filename
    text = open(src).read().splitlines()
    first = kernel.fn.__code__.co_firstlineno
    return [next(n for n in range(first, len(text) + 1) if text[n - 1].strip() == needle) for needle in needles]


def test_lossy_conversion_warns_with_location():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tr = qd.translate(local_truncates, "cuda")
    mine = [w for w in caught if issubclass(w.category, qd.TranslationWarning)]
    assert len(mine) == 2, [str(w.message) for w in caught]
    first, second = lines_of(local_truncates, "acc += a[i]", "acc += a[i] * 3.0")
    text = str(mine[0].message)
    head, src, caret = text.splitlines()[:3]
    assert re.search(rf"test_conversions\.py:{first}:9: warning: `acc` is i32 \(from its first assignment at line "
                     rf"{first - 1}\): the f32 value assigned to it is truncated", head), head
    assert src.strip() == "acc += a[i]" and caret.strip() == "^"
    assert f":{second}:9: warning:" in str(mine[1].message)
    assert "hint: initialize it as a float" in text
    assert [d.kind for d in tr.warnings] == ["lossy-conversion"] * 2
    # the warning is the translation's, as hazards are: qd.translate(warn=False) only returns it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tr = qd.translate(store_truncates, "glsl", warn=False)
    assert not caught and "implicit conversion from f32 to i32 truncates" in str(tr.warnings[0])
    assert "qd.cast(x, qd.i32)" in str(tr.warnings[0])


def test_lossy_conversions_truncate_toward_zero(executor, rng):
    b = (rng.standard_normal(300) * 50).astype(np.float32)
    a = np.zeros(300, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qd.TranslationWarning)
        store_truncates(a, b)
        out = np.zeros(300, np.int32)
        local_truncates(b, out)
        got = return_truncates(-3.75)
    np.testing.assert_array_equal(a, np.trunc(b * np.float32(2)).astype(np.int32))
    want = np.array([int(np.float32(np.trunc(x)) + np.float32(x) * np.float32(3)) for x in b], np.int32)
    np.testing.assert_array_equal(out, want)
    assert got == -1  # -3.75 + 2 = -1.75 -> -1


vec2f = qd.types.vector(2, qd.f32)
vec3i = qd.types.vector(3, qd.i32)
vec3f = qd.types.vector(3, qd.f32)
line3f = qd.types.struct(linedir=vec3f, length=qd.f32)
mystruct = qd.types.struct(line=line3f, idx=qd.i32)
structi = qd.types.struct(a=qd.i32, b=qd.types.vector(2, qd.i32))
CASTS = 16
casts = vec3i.field(shape=CASTS)
lines = mystruct.field(shape=CASTS)


@qd.kernel
def constructors_cast(f: fvec, out: ivec):
    for i in casts:
        v = vec2f(f[i])
        casts[i] = vec3i(v, f[i] * 2.0)         # no warning: a constructor casts
        s = structi(f[i], (f[i], -f[i]))
        out[i] = s.a * 100 + s.b[0] * 10 + s.b[1]


@qd.kernel
def first_member(k: qd.i32):
    for i in lines:
        if i % 2 == 0:
            lines[i] = mystruct(k)               # line = line3f(k): linedir = k, length = 0
        else:
            lines[i] = mystruct(line3f(vec3f(i), 0.5 * i), i)


def test_constructors_cast_and_fill_first_members(executor, rng):
    f = rng.uniform(-4, 4, CASTS).astype(np.float32)
    out = np.zeros(CASTS, np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", qd.TranslationWarning)
        constructors_cast(f, out)
        first_member(3)
    t = np.trunc(f).astype(np.int32)
    np.testing.assert_array_equal(casts.to_numpy(), np.stack([t, t, np.trunc(f * 2).astype(np.int32)], 1))
    np.testing.assert_array_equal(out, t * 100 + t * 10 - t)
    got = lines.to_numpy()
    i = np.arange(CASTS)
    even = i % 2 == 0
    np.testing.assert_array_equal(got["line"]["linedir"], np.where(even[:, None], 3.0, i[:, None]) * np.ones(3))
    np.testing.assert_array_equal(got["line"]["length"], np.where(even, 0.0, 0.5 * i))
    np.testing.assert_array_equal(got["idx"], np.where(even, 0, i))


@pytest.mark.toolchain
@pytest.mark.parametrize("target", target_names())
def test_conversion_kernels_compile(target):
    for kernel in (store_truncates, local_truncates, return_truncates, constructors_cast, first_member):
        assert_compiles(target, qd.translate(kernel, target, warn=False), kernel.__name__)


# ----------------------------------------------------------------------------- Python scope

def test_python_scope_struct_values_are_typed():
    s = mystruct(3)
    assert s.idx == 0 and s.line.length == 0.0
    np.testing.assert_array_equal(s.line.linedir, [3.0, 3.0, 3.0])
    t = structi(2.5, (2.5, -2.5))
    assert t.a == 2 and isinstance(t.a, int) and list(t.b) == [2, -2]
    t.a = 7.9
    assert t.a == 7  # a member keeps its type
    t.b = 1.5
    assert list(t.b) == [1, 1]
    with pytest.raises(AttributeError, match="no member `c`"):
        t.c = 1
    with pytest.raises(TypeError, match="has no member `bogus`"):
        structi(bogus=1)
    with pytest.raises(TypeError, match="has 2 member\\(s\\), given 3 values"):
        structi(1, 2, 3)
    anon = qd.Struct({"line": {"linedir": [1, 2, 3], "length": 0.5}, "idx": 4})
    assert anon.line.linedir.x == 2 - 1 and anon.line.length == 0.5
    assert anon.to_dict() == {"line": {"linedir": [1, 2, 3], "length": 0.5}, "idx": 4}
    v = vec3i(1.8, vec2f(2.5, -0.5))  # scalars and vectors concatenate, then cast
    np.testing.assert_array_equal(v, [1, 2, 0])


def test_dataclass_python_methods_and_nested_members():
    @qd.dataclass
    class A:
        i: qd.i32
        j: qd.f32

        def total(self):
            return self.i + self.j

    @qd.dataclass
    class B:
        a1: A
        a2: A

    b = B(A(1, 2.5))
    assert b.a1.total() == 3.5 and b.a2.i == 0 and b.a2.j == 0.0
    b.a2 = {"i": 4.7, "j": 1}
    assert b.a2.i == 4 and b.a2.total() == 5.0


def test_struct_field_elements_write_through(rng):
    qd.init(arch="vulkan")
    n = 12
    x = mystruct.field(shape=n)
    y = line3f.field()
    qd.root.dense(qd.i, n // 4).dense(qd.i, 4).place(y)
    lengths = rng.uniform(1, 2, n).astype(np.float32)
    for i in range(n):
        y[i] = line3f(vec3f(i), lengths[i])
        x[i].idx = i * 1.9                  # cast to the member's i32
        x[i].line = y[i]                    # a nested struct, member by member
        x[i].line.linedir[1] = -i           # a vector member of a nested view
    x[2].line.length = 9.0
    got = x.to_numpy()
    np.testing.assert_array_equal(got["idx"], (np.arange(n) * 1.9).astype(np.int32))
    want_dir = np.repeat(np.arange(n, dtype=np.float32)[:, None], 3, 1)
    want_dir[:, 1] = -np.arange(n)
    np.testing.assert_array_equal(got["line"]["linedir"], want_dir)
    want_len = lengths.copy()
    want_len[2] = 9.0
    np.testing.assert_array_equal(got["line"]["length"], want_len)
    assert x[5].line.length == pytest.approx(lengths[5]) and x[5].idx == int(5 * 1.9)
    np.testing.assert_array_equal(y.to_numpy()["linedir"][:, 1], np.arange(n))  # y is untouched
