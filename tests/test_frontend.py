"""Unit tests of the frontend and IR: types, promotion, scoping, inlining, qd.static."""
from __future__ import annotations

import inspect

import pytest

import transpiler as qd
from transpiler.ir import types as T
from transpiler.ir.printer import dump_kernel
from transpiler.pipeline import lower

f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
u8v = qd.types.ndarray(dtype=qd.u8, ndim=1)


def cuda(kernel, **options) -> str:
    tr = qd.translate(kernel, "cuda", **options)
    return "\n".join(tr.sources.values())


@pytest.mark.parametrize("a,b,want", [
    (T.i32, T.f32, T.f32), (T.i64, T.f32, T.f32), (T.f32, T.f64, T.f64), (T.i32, T.u32, T.u32),
    (T.i8, T.i32, T.i32), (T.u8, T.i16, T.i16), (T.i64, T.u32, T.i64), (T.bool_, T.bool_, T.i32),
    (T.bool_, T.u8, T.i32), (T.f16, T.i64, T.f16),
])
def test_promotion(a, b, want):
    assert T.promote(a, b) == want and T.promote(b, a) == want


def test_literals_adapt_to_the_other_operand():
    @qd.kernel
    def k(a: u8v, f: f32v):
        for i in range(a.shape[0]):
            a[i] = a[i] + 1
            f[i] = f[i] * 2
            f[i] = a[i] * 0.5

    text = dump_kernel(lower(k))
    assert "add.u8(a[i.0], 1:u8)" in text
    assert "mul.f32(f[i.0], 2.0:f32)" in text
    assert "mul.f32(cast.f32(a[i.0]), 0.5:f32)" in text


def test_true_division_of_ints_is_f32():
    @qd.kernel
    def k(a: i32v, f: f32v):
        for i in range(a.shape[0]):
            f[i] = a[i] / 2

    assert "truediv.f32(cast.f32(a[i.0]), 2.0:f32)" in dump_kernel(lower(k))


def test_local_type_is_fixed_by_the_first_assignment():
    @qd.kernel
    def k(f: f32v):
        for i in range(f.shape[0]):
            x = 0.0
            x = 3          # an int literal into an f32 local is exact
            f[i] = x

    assert "float x = 0.0f;" in cuda(k) and "x = 3.0f;" in cuda(k)


def test_single_return_function_inlines_as_an_expression():
    @qd.func
    def sq(v):
        return v * v

    @qd.kernel
    def k(f: f32v):
        for i in range(f.shape[0]):
            f[i] = sq(f[i]) + sq(2.0)

    src = cuda(k)
    # The argument is read once into the parameter's name; the constant call folds.
    assert "float v = f[i];" in src and "f[i] = v * v + 4.0f;" in src
    assert "sq_result" not in src


def test_function_with_statements_gets_a_result_variable():
    @qd.func
    def relu(v):
        if v < 0.0:
            return 0.0
        else:
            return v

    @qd.func
    def shifted(v):
        r = v + 1.0
        return r

    @qd.kernel
    def k(f: f32v):
        for i in range(f.shape[0]):
            f[i] = relu(f[i]) + shifted(f[i])

    src = cuda(k)
    assert "float relu_result;" in src and "relu_result = 0.0f;" in src
    # A single return at the end needs no result variable.
    assert "f[i] = relu_result + r;" in src


def test_inlined_names_do_not_capture_callers_names():
    @qd.func
    def g(x):
        t = x + 1.0
        return t * 2.0

    @qd.kernel
    def k(f: f32v):
        for i in range(f.shape[0]):
            t = f[i]
            f[i] = g(t) + t

    src = cuda(k)
    assert "float t_1 = t + 1.0f;" in src
    assert "f[i] = t_1 * 2.0f + t;" in src


def test_static_if_drops_the_other_branch_entirely():
    @qd.kernel
    def k(f: f32v, flag: qd.template()):
        for i in range(f.shape[0]):
            if qd.static(flag):
                f[i] = 1.0
            else:
                f[i] = undefined_thing  # noqa: F821 - never compiled when flag is true

    assert "f[i] = 1.0f;" in cuda(k, template_args={"flag": True})
    with pytest.raises(qd.TranspileError, match="undefined name"):
        qd.translate(k, "cuda", template_args={"flag": False})


def test_static_for_unrolls():
    @qd.kernel
    def k(f: f32v):
        for i in range(f.shape[0]):
            for j in qd.static(range(3)):
                f[i] += j

    src = cuda(k)
    assert src.count("f[i] = f[i] + ") == 3  # f[i] is the thread's own: no atomic (passes/demote.py)


ALIASED_STATIC = qd.static  # a module-level alias of a built-in is still that built-in


def test_builtins_are_recognised_under_any_name_that_reaches_them():
    from transpiler import loop_config as configure

    st = qd.static  # a closure value

    @qd.func
    def fill(f: qd.template(), i, unroll: qd.template()):
        for j in unroll(range(2)):  # a template argument
            f[i] += j + 10

    @qd.kernel
    def k(f: f32v, flag: qd.template()):
        configure(block_dim=64)
        for i in range(f.shape[0]):
            for j in ALIASED_STATIC(range(3)):
                f[i] += j
            if st(flag):
                f[i] = 7.0
            fill(f, i, qd.static)

    tr = qd.translate(k, "cuda", template_args={"flag": True}, warn=False)
    src = "\n".join(tr.sources.values())
    assert src.count("f[i] = f[i] + ") == 5 and src.count("for (") == 1  # 3 + 2 copies; only the task loop
    assert "f[i] = 7.0f;" in src and "if (" not in src  # the static if chose at translation time
    assert tr.manifest["entry_points"][0]["block_dim"] == 64


def test_a_local_named_like_a_builtin_is_not_it():
    @qd.kernel
    def k(f: f32v):
        for i in range(f.shape[0]):
            ALIASED_STATIC = f[i]  # noqa: N806 - a run-time value now, in this scope
            for j in ALIASED_STATIC(range(3)):
                f[i] += j

    lines, first = inspect.getsourcelines(k.fn)
    line = first + next(n for n, text in enumerate(lines) if "in ALIASED_STATIC(" in text)
    with pytest.raises(qd.TranspileError, match=rf"test_frontend.py:{line}:22: .*must iterate over range"):
        qd.translate(k, "cuda")


@pytest.mark.parametrize("call, says", [
    ("scale(f[i])", "Missing argument 'k'"),            # too few (Quadrants' words for Python's messages)
    ("scale(f[i], 2.0, 3.0)", "Too many arguments"),
    ("scale(f[i], kk=2.0)", "Missing argument 'k'"),   # a misspelt keyword leaves k unbound
    ("scale(f[i], 2.0, x=1.0)", "Multiple values for argument 'x'"),
])
def test_a_func_called_with_the_wrong_arguments_is_located(tmp_path, call, says):
    src = tmp_path / "bad_call.py"
    src.write_text(f"""import transpiler as qd


@qd.func
def scale(x, k):
    return x * k


@qd.kernel
def k(f: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(f.shape[0]):
        f[i] = {call}
""")
    from transpiler.cli import load_kernels

    kernels, _ = load_kernels(str(src))
    with pytest.raises(qd.TranspileError, match=rf"bad_call.py:12:16: error: bad arguments to `scale`: {says}"):
        qd.translate(kernels["k"], "cuda")


def test_each_template_value_is_its_own_instantiation():
    @qd.kernel
    def k(f: f32v, n: qd.template()):
        for i in range(f.shape[0]):
            f[i] = n

    assert "f[i] = 3.0f;" in cuda(k, template_args={"n": 3})
    assert "f[i] = 4.0f;" in cuda(k, template_args={"n": 4})


def test_unannotated_ndarray_takes_arg_types():
    @qd.kernel
    def k(a: qd.types.ndarray()):
        for i in range(a.shape[0]):
            a[i] = 1

    with pytest.raises(qd.TranspileError, match="needs a dtype and ndim"):
        qd.translate(k, "cuda")
    src = cuda(k, arg_types={"a": qd.types.ndarray(dtype=qd.i64, ndim=1)})
    assert "int64_t* a" in src


def test_translate_argument_errors():
    with pytest.raises(TypeError):
        qd.translate(lambda: None, "cuda")

    @qd.kernel
    def k(a: f32v):
        for i in range(a.shape[0]):
            a[i] = 0.0

    with pytest.raises(ValueError, match="unknown target"):
        qd.translate(k, "spirv")


def test_folding_keeps_unrolled_indices_readable():
    @qd.kernel
    def k(a: f32v, b: f32v):
        for i in range(1, a.shape[0] - 1):
            s = 0.0
            for d in qd.static(range(3)):
                s += a[i + d - 1]
            b[i] = s

    src = cuda(k)
    assert "a[i - 1]" in src and "a[i]" in src and "a[i + 1]" in src and "+ 0" not in src


def test_ir_dump_is_stable():
    @qd.kernel
    def k(a: f32v):
        for i in range(a.shape[0]):
            x = a[i]
            a[i] = x * x

    first, second = dump_kernel(lower(k)), dump_kernel(lower(k))
    assert first == second
    assert "let x.1: f32 = a[i.0]" in first


def test_chained_comparison_and_boolean_ops():
    @qd.kernel
    def k(a: i32v):
        for i in range(a.shape[0]):
            if 0 < a[i] <= 10 or not a[i]:
                a[i] = 1

    assert "if ((0 < a[i] && a[i] <= 10) || !(a[i] != 0)) {" in cuda(k)


def test_tuple_swap_evaluates_right_side_first():
    @qd.kernel
    def k(a: i32v):
        for i in range(a.shape[0]):
            x = a[i]
            y = i
            x, y = y, x
            a[i] = x - y

    src = cuda(k)
    assert "int32_t tmp = y;" in src and "int32_t tmp_1 = x;" in src and "x = tmp;" in src


SOURCE_SHAPES = '''
import transpiler as qd


def keep(*_args, **_kwargs):
    return lambda fn: fn


def outer():
    @keep(
        "a decorator over two lines"
    )
    @qd.kernel
    def nested(x: qd.types.ndarray(qd.f32, 1)):
        """A docstring whose second line starts
at column 0: cutting the definition at that line leaves a string that does not end."""
        for i in range(x.shape[0]):
            x[i] = x[i] + qd.cast(len("""
"""), qd.f32) + undefined_name
    return nested


@qd.kernel
def one_line(x: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]): x[i] = x[i] * 2.0 + missing  # noqa: E701
'''


def test_definitions_are_read_whatever_their_shape(tmp_path):
    """Kernels are read from their file by indentation, and by Python's tokenizer where
    that is not enough (a line at column 0 inside a string, a decorator over several lines):
    either way every location is the file's own line and column."""
    from conftest import load_module

    path = tmp_path / "shapes.py"
    path.write_text(SOURCE_SHAPES)
    module = load_module(path)
    with pytest.raises(qd.TranspileError) as err:
        qd.translate(module.outer(), "cuda")
    assert "shapes.py:19:17: error: undefined name `undefined_name`" in str(err.value)
    with pytest.raises(qd.TranspileError) as err:
        qd.translate(module.one_line, "cuda")
    assert "shapes.py:25:53: error: undefined name `missing`" in str(err.value)


def test_the_default_types_are_per_thread():
    """A backend translates a warm-up kernel in a background thread while the caller lowers
    its first kernel: qd.init(default_fp=qd.f64) must hold in the caller's thread whatever
    the other thread lowers under (before, a first call could get f32 locals)."""
    import threading

    from transpiler.ir import types as T

    entered, release, seen = threading.Event(), threading.Event(), []

    def other():
        with T.using_defaults(T.Defaults(T.i32, T.f32)):
            entered.set()
            release.wait(5)
            seen.append(T.defaults().fp)

    with T.using_defaults(T.Defaults(T.i64, T.f64, debug=True)):
        t = threading.Thread(target=other)
        t.start()
        entered.wait(5)
        assert T.defaults() == T.Defaults(T.i64, T.f64, debug=True) and T.python_type(float) is T.f64
        release.set()
        t.join()
    assert seen == [T.f32] and T.defaults() == T.Defaults()


def test_a_translation_leaves_the_cycle_collector_as_it_found_it():
    """The pipeline pauses Python's cycle collector while it translates (pipeline.py): it is
    on again afterwards, after an error too, and stays off for a caller who turned it off."""
    import gc

    from transpiler.errors import TranspileError

    @qd.kernel
    def scale(x: f32v):
        for i in range(x.shape[0]):
            x[i] = x[i] * 2.0

    @qd.kernel
    def broken(x: f32v):
        for i in range(x.shape[0]):
            x[i] = undefined_name  # noqa: F821

    assert gc.isenabled()
    qd.translate(scale, "cuda")
    assert gc.isenabled()
    with pytest.raises(TranspileError, match="undefined name `undefined_name`"):
        qd.translate(broken, "glsl")
    assert gc.isenabled()
    gc.disable()
    try:
        qd.translate(scale, "msl")
        assert not gc.isenabled()
    finally:
        gc.enable()


@qd.func
def _odd_steps(n: qd.i32) -> qd.i32:
    k = 0
    for j in range(n):
        if j == 5:
            break
        if j % 2 == 0:
            continue
        k += j
    return k


@qd.kernel
def _index_arithmetic(x: f32v, a: i32v, m: qd.i32):
    n = x.shape[0] // 2
    for i in range(n):
        j = i * 2 + 1
        a[j] = _odd_steps(a[i] + m)
        x[i] = x[j] * 0.5


@pytest.mark.parametrize("target", qd.TARGETS)
def test_a_translation_leaves_no_reference_cycles(target):
    """What a translation allocates is freed by reference counting alone: the collector then
    has nothing to find when it runs after the translation (it is paused during one). A
    recursive closure (the range analysis walked each statement with one, 53 cycles in a
    corpus kernel) made garbage for it on every translation."""
    import gc

    qd.translate(_index_arithmetic, target, warn=False)  # imports, templates, parse caches
    gc.collect()
    gc.disable()
    try:
        for cache in ("_ir_cache", "_hazard_cache"):
            _index_arithmetic.__dict__.pop(cache, None)
        first = qd.translate(_index_arithmetic, target, warn=False)
        assert gc.collect() == 0
    finally:
        gc.enable()
    assert any("break;" in text for text in first.sources.values())  # the inlined loop was rendered
