"""Quadrants' API as its own test suite and users spell it (our kernels, modelled on
Quadrants' tests/python): Python-scope access to field elements, struct-for over a level
named by x.parent(), asserts whose condition has effects, vector qd.ndarrays for an
annotation without a dtype, qd.init's own options, its exception classes, the graph
namespace's aliases and its contexts outside kernels."""
import numpy as np
import pytest

import transpiler as qd

from conftest import target_names

pair = qd.Vector.field(2, qd.f32, shape=())
points = qd.Struct.field({"a": qd.f32, "b": qd.i32}, shape=(4,))
blocked = qd.field(qd.i32)
qd.root.dense(qd.ij, (3, 7)).dense(qd.ij, (2, 4)).place(blocked)
counter = qd.field(qd.i32, shape=())


@qd.kernel
def pair_sum() -> qd.f32:
    return pair[None][0] * 10.0 + pair[None][1]


@qd.kernel
def count_cells():
    for i, j in blocked.parent():            # the level the field is placed in: 6 x 28 cells
        blocked[i, j] += i * 100 + j


@qd.real_func
def bump(by: qd.i32) -> qd.i32:
    counter[None] += by
    return 0


@qd.kernel
def checked(k: qd.i32):
    assert bump(k) == 0                      # compiled away, but the call in it still runs
    assert counter[None] >= 0


@qd.kernel
def fill_vectors(x: qd.types.ndarray(ndim=1)):
    for i in range(x.shape[0]):
        x[i] = qd.math.ivec3(i, 2 * i, 3 * i)


vec3f = qd.types.vector(3, qd.f32)
line3f = qd.types.struct(linedir=vec3f, length=qd.f32)
nested = qd.types.struct(line=line3f, idx=qd.i32)
lines = nested.field(shape=(8,))


@qd.kernel
def broadcast_structs(k: qd.f32):
    for i in range(8):
        lines[i] = nested(k)                  # a scalar for the struct member `line` is line3f(k): length 0
        if i % 2 == 0:
            lines[i].line = line3f(i)         # linedir = (i, i, i), length = 0


def test_a_scalar_is_the_first_argument_of_a_nested_struct_member(executor, rng):
    k = float(rng.uniform(1, 9))
    broadcast_structs(k)
    even = np.arange(8) % 2 == 0
    want_dir = np.where(even[:, None], np.arange(8)[:, None] * np.ones(3), np.float32(k))
    np.testing.assert_allclose(lines.line.linedir.to_numpy(), want_dir, rtol=1e-6)
    np.testing.assert_array_equal(lines.line.length.to_numpy(), 0)  # as Quadrants 1.3.3 computes it
    np.testing.assert_array_equal(lines.idx.to_numpy(), 0)


pairs = qd.Struct.field({"a": qd.i32, "v": qd.math.vec2}, shape=(3,))


@qd.kernel
def anonymous_structs(k: qd.f32):
    for i in range(2):
        pairs[i] = qd.Struct(a=i * 10, v=qd.math.vec2(k, i))
    s = qd.Struct({"a": 7, "v": qd.math.vec2(k, 2.5)})
    pairs[2] = qd.Struct({"a": s.a + 1, "v": s.v * 2.0})


def test_anonymous_struct_values(executor, rng):
    k = float(rng.uniform(1, 5))
    anonymous_structs(k)
    np.testing.assert_array_equal(pairs.a.to_numpy(), [0, 10, 8])
    np.testing.assert_allclose(pairs.v.to_numpy(), [[k, 0], [k, 1], [2 * k, 5]], rtol=1e-6)
    pairs[1] = qd.Struct({"a": 3, "v": [0.5, 0.25]})       # Python scope: a dict of the members
    assert pairs[1].a == 3 and list(pairs[1].v) == [0.5, 0.25] and qd.Struct(a=1).a == 1


def test_python_scope_elements_write_through_and_read_as_quadrants_does(executor, rng):
    v = rng.standard_normal(2).astype(np.float32)
    pair[None][0] = v[0]                     # a vector element is a view of the field
    pair[()][1] = v[1]
    assert pair[None].x == v[0] and np.array_equal(pair[None].to_numpy(), v)
    assert pair_sum() == pytest.approx(v[0] * 10 + v[1], rel=1e-6)
    points[2] = {"a": 1.5, "b": 7}
    assert points[2].a == 1.5 and points[2].b == 7 and points[2]["b"] == 7 and points[2].to_dict() == {"a": 1.5, "b": 7}
    with pytest.raises(AttributeError, match="the struct has no member `c`"):
        points[2].c  # noqa: B018


def test_struct_for_over_a_level_and_asserts_with_effects(executor, rng):
    blocked.fill(0)
    count_cells()
    i, j = np.meshgrid(np.arange(6), np.arange(28), indexing="ij")
    np.testing.assert_array_equal(blocked.to_numpy(), i * 100 + j)
    counter[None] = 0
    k = int(rng.integers(1, 50))
    checked(k)
    checked(k)
    assert counter[None] == 2 * k


def test_a_vector_ndarray_for_an_annotation_without_dtype(executor):
    arr = qd.ndarray(qd.math.ivec3, shape=(5,))
    fill_vectors(arr)
    np.testing.assert_array_equal(arr.to_numpy(), np.arange(5)[:, None] * np.array([1, 2, 3]))


def test_init_options_exceptions_and_graph_aliases():
    qd.init(arch="cpu", debug=True, offline_cache=False, log_level="error", cuda_stack_limit=8192)
    with pytest.raises(TypeError, match="fast_mathh"):
        qd.init(arch="cpu", fast_mathh=True)  # a typo still fails
    qd.init(arch="cpu")
    assert qd.QuadrantsSyntaxError is qd.QuadrantsCompilationError is qd.TranspileError
    assert qd.graph_do_while is qd.graph.do_while and qd.graph_parallel is qd.graph.parallel
    with qd.graph.parallel_context():          # outside a kernel: nothing to fork
        with qd.graph.parallel():
            ran = True
    assert ran
    with pytest.raises(qd.QuadrantsSyntaxError, match="undefined name"):
        qd.translate(uses_undefined, "cuda")


@qd.kernel
def uses_undefined(x: qd.types.ndarray(qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        x[i] = nonexistent  # noqa: F821


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names())
def test_quadrants_api_kernels_compile(target):
    from transpiler.toolchains import check_sources

    for kernel in (pair_sum, count_cells, checked, fill_vectors, broadcast_structs, anonymous_structs):
        tr = qd.translate(kernel, target, warn=False,
                          arg_types={"x": qd.types.ndarray(dtype=qd.math.ivec3, ndim=1)} if kernel is fill_vectors else None)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"



SPAN = 4


@qd.kernel
def hinted(a: qd.types.ndarray(dtype=qd.f32, ndim=1), base: qd.i32):
    for i in range(a.shape[0]):
        j = qd.assume_in_range(base + i % SPAN, base, 0, SPAN)   # a hint: the value, untouched
        a[i] = a[i] * 2.0 + j


def test_assume_in_range_is_its_value(executor, rng):
    a = rng.standard_normal(50).astype(np.float32)
    want = a * 2 + 3 + np.arange(50) % SPAN
    hinted(a, 3)
    np.testing.assert_allclose(a, want, rtol=1e-6)


def test_static_print_prints_once_when_the_kernel_is_translated(capsys):
    @qd.kernel
    def shows(a: qd.types.ndarray(dtype=qd.f32, ndim=1)):
        qd.static_print("span", SPAN, qd.static(SPAN * 2), sep=":")
        for i in range(a.shape[0]):
            qd.static_print(i, a[i] * 2)
            a[i] = 1.0

    for target in target_names():
        tr = qd.translate(shows, target)
        assert "span" not in "".join(tr.sources.values())
    assert capsys.readouterr().out == "span:4:8\n<i32 run-time value> <f32 run-time value>\n"


def test_primitive_type_sets():
    from transpiler.types import primitive_types

    pt = qd.types.primitive_types
    assert pt is primitive_types and qd.f32 in pt.real_types and qd.u8 in pt.integer_types
    assert pt.all_types == pt.real_types | pt.integer_types and qd.f64 not in pt.integer_types
    assert id(qd.i32) in pt.type_ids and float in pt.real_types and int in pt.integer_types


def test_cfg_and_impl_say_what_init_chose():
    qd.init(arch=qd.cpu, debug=True, real_matrix_scalarize=False, default_fp=qd.f64, random_seed=3)
    assert qd.cfg.arch == qd.cpu and qd.cfg.debug is True and qd.cfg.default_fp == qd.f64
    assert qd.cfg.real_matrix_scalarize is False and qd.cfg.random_seed == 3 and qd.cfg.kernel_profiler is None
    assert qd.lang.impl.current_cfg() is qd.cfg and qd.lang.impl.get_max_shared_memory_bytes(is_lowerbound_ok=True) \
        == 48 * 1024  # the CUDA text's static shared memory, which the CPU executor keeps
    with pytest.raises(TypeError, match="unexpected keyword argument 'not_an_option'"):
        qd.init(arch=qd.cpu, not_an_option=1)  # a typo is still an error
    qd.init(arch=qd.vulkan)
    assert qd.cfg.arch == qd.vulkan and not qd.cfg.debug and qd.cfg.default_fp == qd.f32
    assert 16 * 1024 <= qd.lang.impl.get_max_shared_memory_bytes() <= 1 << 20  # the device's own limit


def test_ndrange_and_grouped_iterate_in_python_scope():
    # the order Quadrants 1.3.3 gives, axes= included
    assert list(qd.ndrange(2, (1, 3))) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert list(qd.ndrange(3)) == [(0,), (1,), (2,)] and list(qd.ndrange((4, 2))) == []
    assert list(qd.ndrange(2, 3, axes=(1, 0))) == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]
    assert [v.tolist() for v in qd.ndrange(2, 2).grouped()] == [[0, 0], [0, 1], [1, 0], [1, 1]]
    x = qd.field(qd.i32, shape=(2, 3))
    for i, j in qd.ndrange(2, 3):
        x[i, j] = 10 * i + j
    assert [x[I] for I in qd.grouped(x)] == [0, 1, 2, 10, 11, 12]
    with pytest.raises(TypeError, match="every argument of qd.ndrange is an int"):
        qd.ndrange(2.5)


def test_python_scope_indexing_of_ndarrays_and_comparisons_of_vectors():
    x = qd.ndarray(qd.f32, shape=())
    x[()] = 1.5
    assert x[None] == 1.5 and type(x[None]) is float
    y = qd.ndarray(qd.math.vec2, shape=())
    y[()] = [1.0, 2.0]
    assert y[None] == [1.0, 2.0] and not (y[None] == [1.0, 3.0])  # a comparison is true when every part is
    v = qd.Vector.ndarray(3, qd.i32, (4,))
    v[2][1] = 7                                      # an element is a view that writes through
    v[qd.Vector([3])] = [1, 2, 3]                    # an index vector, as qd.grouped gives
    assert v.to_numpy().tolist() == [[0, 0, 0], [0, 0, 0], [0, 7, 0], [1, 2, 3]]
    assert v[1:3].shape == (2,) and v[1:3].to_numpy().shape == (2, 3)  # a range of a 1-d one: a qd.BufferView
    m = qd.Matrix([[2, 3, 4], [5, 6, 7]])
    assert list(m) == [[2, 3, 4], [5, 6, 7]] and len(m) == 2


def test_exception_classes_and_arch_names_as_quadrants_spells_them():
    from transpiler.lang.exception import QuadrantsCompilationError, QuadrantsRuntimeError, QuadrantsSyntaxError
    from transpiler.lang.impl import Kernel, QuadrantsTypeError

    assert QuadrantsCompilationError is QuadrantsSyntaxError is QuadrantsTypeError is qd.TranspileError
    assert issubclass(QuadrantsRuntimeError, RuntimeError) and Kernel is qd.Kernel
    assert qd.lang.exception.QuadrantsCompilationError is qd.QuadrantsCompilationError
    assert qd.cuda.name == "cuda" and qd.cuda == "cuda" and qd.x64.name == "x64"
    qd.init(arch=qd.cpu)
    assert qd.lang.impl.current_cfg().arch.name == "cpu"


axes_grid = qd.field(qd.i32, shape=(3, 4))
LOW, HIGH = np.int64(1), np.int32(3)


@qd.kernel
def unrolled_orders(order: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    k = 0
    for I in qd.static(qd.grouped(qd.ndrange(3, 4, axes=(1, 0)))):  # unrolled, columns outermost
        axes_grid[I] = I[0] * 100 + I[1]
        order[k] = I[0] * 10 + I[1]
        k += 1
    for i, j in qd.static(qd.ndrange((LOW, HIGH), 2)):                 # NumPy integers as extents
        order[12 + (i - 1) * 2 + j] = i * 10 + j
    for i, j in qd.ndrange(3, 4, axes=None):                           # None: the written order
        axes_grid[i, j] += 1


def test_ndrange_extents_and_axes_known_at_translation(executor):
    order = np.zeros(16, np.int32)
    unrolled_orders(order)
    assert order[:12].tolist() == [i * 10 + j for j in range(4) for i in range(3)]
    assert order[12:].tolist() == [10, 11, 20, 21]
    np.testing.assert_array_equal(axes_grid.to_numpy(), np.add.outer(np.arange(3) * 100, np.arange(4)) + 1)


s_inner = qd.types.struct(a=qd.i16, b=qd.f32)
s_outer = qd.types.struct(a=qd.f32, b=s_inner)


@qd.kernel
def struct_sum(s: s_outer, k: qd.u8) -> qd.f32:
    return s.a + s.b.a + s.b.b + k


def test_arguments_convert_as_c_does(executor):
    # as Quadrants passes them: 65537 as i16 is 1, 300 as u8 is 44
    assert struct_sum(s_outer(a=1, b=s_inner(a=65537, b=123)), 300) == pytest.approx(1 + 1 + 123 + 44)
    assert (qd.i16(65537), qd.u16(-1), qd.i32(-2.7)) == (1, 65535, -2)


@qd.kernel
def scale_view(v: qd.BufferView[qd.f32], factor: qd.f32):
    for i in range(v.size):
        v[i] = v[i] * factor


@qd.kernel
def add_views(a: qd.BufferView, b: qd.BufferView):
    for i in range(a.shape[0]):
        a[i] += b[i]


def test_buffer_views_pass_a_range_of_an_ndarray(executor, rng):
    x = rng.standard_normal(64).astype(np.float32)
    data = qd.ndarray(qd.f32, shape=(64,))
    data.from_numpy(x)
    want = x.copy()
    scale_view(data[:32], 2.0)                                  # as the user guide writes it
    want[:32] *= 2
    mid = data[8:24]
    sub = mid[4:12]                                             # a subview: offsets add up
    assert (sub.offset, sub.size) == (12, 8) and sub.subview(offset=1, size=2).offset == 13
    scale_view(sub[:4], 10.0)
    want[12:16] *= 10
    add_views(data[40:50], qd.BufferView(data, offset=0, size=10))
    want[40:50] += want[:10]
    np.testing.assert_allclose(data.to_numpy(), want, rtol=1e-6)
    assert data[-8:].offset == 56 and data[16:48][2] == pytest.approx(want[18])
    with pytest.raises(ValueError, match="a slice with step 2"):
        data[::2]
    with pytest.raises(ValueError, match="does not fit"):
        qd.BufferView(data, offset=60, size=8)
    with pytest.raises(ValueError, match="1-d qd.ndarray"):
        qd.BufferView(qd.ndarray(qd.f32, (4, 4)))
    with pytest.raises(TypeError, match="needs_grad=True is not supported"):
        qd.ndarray(qd.f32, (8,), needs_grad=True)[2:4]


@pytest.mark.parametrize("shape", [2**31, 1.5, 0, (1, 0), (1, 0.5), (1, 2**31)])
def test_an_invalid_ndarray_shape_is_refused(shape):
    with pytest.raises(qd.QuadrantsRuntimeError, match="is not a valid shape for ndarray"):
        qd.ndarray(qd.f32, shape)
    assert qd.ndarray(qd.f32, (1, np.int32(2), 3)).shape == (1, 2, 3)


def test_tensor_wraps_a_field_or_an_ndarray_in_dataclass_members(executor, rng):
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class State:
        x: qd.Tensor
        y: qd.Tensor

    @qd.kernel
    def step(state: State, k: qd.f32):
        for i in range(4):
            state.y[i] = state.x[i] * k

    xs = rng.standard_normal(4).astype(np.float32)
    x = qd.field(qd.f32, shape=(4,))
    x.from_numpy(xs)
    y = qd.ndarray(qd.f32, shape=(4,))
    state = State(x=qd.Tensor(x), y=qd.Tensor(y))
    assert state.x is x and x._unwrap() is x  # Quadrants' wrapper: here the storage is its own
    step(state, 2.5)
    np.testing.assert_allclose(y.to_numpy(), xs * 2.5, rtol=1e-6)


def test_tensor_is_a_type_fields_and_ndarrays_are_instances_of():
    x = qd.field(qd.f32, shape=(2, 3))
    a = qd.ndarray(qd.i32, shape=(4,))
    a.from_numpy(np.arange(4, dtype=np.int32))
    assert isinstance(x, qd.Tensor) and isinstance(a, qd.Tensor) and not isinstance(np.zeros(2), qd.Tensor)
    assert qd.is_tensor(a) and not qd.is_tensor(3.0) and qd.wrap(a) is a
    with pytest.raises(TypeError, match="takes a field or an ndarray"):
        qd.wrap(np.zeros(2))
    assert qd.tensor(qd.f32, (2, 3), layout=(1, 0)).layout == (1, 0) and x.layout is None
    out = a.to_numpy(dtype=qd.f32)
    assert out.dtype == np.float32 and out.tolist() == [0, 1, 2, 3]
    assert qd.Tensor(dtype=qd.f32, ndim=2) == qd.types.ndarray(dtype=qd.f32, ndim=2)  # an annotation


def test_none_for_an_array_parameter_is_a_translation_time_none(executor, rng):
    @qd.kernel
    def add_bias(out: qd.types.NDArray[qd.f32, 1], bias: qd.Tensor):
        for i in range(out.shape[0]):
            if qd.static(bias is not None):
                out[i] = qd.f32(i) + bias[i]
            else:
                out[i] = qd.f32(i)
            if bias is None:  # without qd.static too: decided when the kernel is translated
                out[i] *= 2.0

    out = qd.ndarray(qd.f32, shape=(6,))
    b = rng.standard_normal(6).astype(np.float32)
    bias = qd.ndarray(qd.f32, shape=(6,))
    bias.from_numpy(b)
    add_bias(out, bias)
    np.testing.assert_allclose(out.to_numpy(), np.arange(6) + b, rtol=1e-6)
    add_bias(out, None)
    np.testing.assert_array_equal(out.to_numpy(), np.arange(6) * 2.0)


def test_a_non_contiguous_numpy_argument_is_written_back(executor, rng):
    @qd.kernel
    def twice(a: qd.types.ndarray(dtype=qd.f32, ndim=2)):
        for i, j in a:
            a[i, j] = a[i, j] * 2.0 + qd.f32(i)

    base = rng.standard_normal((6, 5)).astype(np.float32)
    want = base.copy()
    view = base.T  # a transposed view: not C-contiguous, as Quadrants accepts it
    twice(view)
    want.T[...] = want.T * 2 + np.arange(5, dtype=np.float32)[:, None]
    np.testing.assert_allclose(base, want, rtol=1e-6)
