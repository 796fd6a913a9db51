"""Kernels that must be rejected. The line that should be reported carries an
"error:" comment with text the message must contain; test_diagnostics.py checks both."""
import numpy as np

import transpiler as qd

vec = qd.types.ndarray(dtype=qd.f32, ndim=1)
ivec = qd.types.ndarray(dtype=qd.i32, ndim=1)


class _Scaler:  # a callable object: not a function the kernel could inline
    def __call__(self, x):
        return x + 1


scaler = _Scaler()


@qd.func
def recursive(n):
    return recursive(n - 1)  # error: recursion is not supported


@qd.func
def early_return(x):
    if x > 0:
        return x  # error: must be its last statement
    y = x * 2
    return y


@qd.kernel
def list_comp(a: vec):
    for i in range(a.shape[0]):
        a[i] = sum([1 for _ in range(i)])  # error: a list comprehension in a kernel iterates over values known


@qd.kernel
def try_except(a: vec):
    for i in range(a.shape[0]):
        try:  # error: try/except statements are not supported
            a[i] = 1.0
        except Exception:
            pass


@qd.kernel
def strings(a: vec):
    for i in range(a.shape[0]):
        s = "hello"  # error: strings are not supported
        a[i] = 0.0


@qd.kernel
def lambdas(a: vec):
    for i in range(a.shape[0]):
        f = lambda v: v  # noqa: E731  # error: lambdas are not supported
        a[i] = f(1.0)


@qd.kernel
def classes(a: vec):
    for i in range(a.shape[0]):
        class Foo:  # error: class definitions statements are not supported
            pass
        a[i] = 0.0


@qd.kernel
def calls_recursive(a: ivec):
    for i in range(a.shape[0]):
        a[i] = recursive(a[i])


@qd.kernel
def unknown_function(a: vec):
    for i in range(a.shape[0]):
        a[i] = scaler(a[i])  # error: call to unknown Python function `_Scaler`


@qd.kernel
def undefined_name(a: vec):
    for i in range(a.shape[0]):
        a[i] = not_defined_anywhere * 2.0  # error: undefined name `not_defined_anywhere`


@qd.kernel
def float_index(a: vec):
    for i in range(a.shape[0]):
        a[a[i]] = 1.0  # error: an index must be an integer, not f32


@qd.kernel
def bitwise_on_float(a: vec):
    for i in range(a.shape[0]):
        a[i] = a[i] & 1  # error: `&` needs integer operands, got f32 and i32


@qd.kernel
def wrong_dims(a: vec):
    for i in range(a.shape[0]):
        a[i, 0] = 1.0  # error: `a` has 1 dimension(s) but is indexed with 2


@qd.kernel
def missing_annotation(a):  # error: parameter `a` has no type annotation
    for i in range(a.shape[0]):
        a[i] = 1.0


@qd.kernel
def bad_annotation(a: str):  # error: unsupported annotation
    for i in range(a):
        pass


@qd.kernel
def break_in_parallel(a: vec):
    for i in range(a.shape[0]):
        break  # error: break is not allowed in a parallel loop


@qd.kernel
def assign_outer_in_parallel(a: vec):
    total = 0.0
    for i in range(a.shape[0]):
        total /= a[i]  # error: cannot assign to `total` inside a parallel loop
    a[0] = total  # (`total = a[i]` is Quadrants' shared store, warned of as a race; `/=` has no atomic)


@qd.kernel
def assign_loop_var(a: vec):
    for i in range(a.shape[0]):
        for k in range(3):
            if a[i] > 0.0:  # (an assignment in the loop's own body starts a new local: Python's rebinding)
                k = 5  # error: cannot assign to the loop variable `k`
        a[i] = 0.0


@qd.kernel
def returns_value(a: vec) -> qd.f32:  # error: annotated to return f32 but never returns a value
    for i in range(a.shape[0]):
        a[i] = 0.0


@qd.kernel
def bitwise_atomic_float(a: vec):
    for i in range(a.shape[0]):
        qd.atomic_or(a[0], 1.0)  # error: bitwise atomics need an integer element


@qd.kernel
def static_not_constant(a: vec, n: qd.i32):
    for i in range(a.shape[0]):
        if qd.static(n > 2):  # error: needs a value known at translation time
            a[i] = 0.0


@qd.kernel
def scoped_local(a: vec):
    for i in range(a.shape[0]):
        if a[i] > 0.0:
            v = 1.0
        a[i] = v  # error: undefined name `v`


@qd.kernel
def kernel_calls_kernel(a: vec):
    for i in range(a.shape[0]):
        list_comp(a)  # error: cannot be called from a kernel


@qd.kernel
def slices(a: vec):
    for i in range(a.shape[0]):
        a[0:2] = 1.0  # error: slices are not supported


@qd.kernel
def assert_stmt(a: vec):
    for i in range(a.shape[0]):
        assert a[i] > undefined_in_assert  # error: undefined name `undefined_in_assert`


@qd.kernel
def calls_early_return(a: ivec):
    for i in range(a.shape[0]):
        a[i] = early_return(a[i])


@qd.kernel
def wrong_arg_count(a: vec):
    for i in range(a.shape[0]):
        a[i] = qd.sqrt(a[i], 2.0)  # error: qd.sqrt() takes 1 argument(s), got 2


@qd.kernel
def static_assert_fails(a: vec):
    qd.static_assert(1 > 2, "the block must be bigger")  # error: the block must be bigger
    for i in range(a.shape[0]):
        a[i] = 0.0


@qd.kernel
def f64_on_metal(a: qd.types.ndarray(dtype=qd.f64, ndim=1)):  # error@msl: f64
    for i in range(a.shape[0]):
        a[i] = 1.0


@qd.kernel
def atomic_i64_on_metal(a: qd.types.ndarray(dtype=qd.i64, ndim=1)):
    for i in range(a.shape[0]):
        qd.atomic_add(a[0], 1)  # error@msl: Metal has no 64-bit integer read-modify-write atomics


@qd.kernel
def exchange_f16(a: qd.types.ndarray(dtype=qd.f16, ndim=1)):
    for i in range(a.shape[0]):
        qd.atomic_exchange(a[0], 1.0)  # error: qd.atomic_exchange on f16 is not supported on any target


@qd.kernel
def exchange_shared_float(a: vec):
    for i in range(a.shape[0]):
        tile = qd.simt.block.SharedArray((128,), qd.f32)
        qd.atomic_exchange(tile[0], a[i])  # error: qd.atomic_exchange on f32 in shared memory is not supported


@qd.kernel
def volatile_local(a: vec):
    for i in range(a.shape[0]):
        x = a[i]
        a[i] = qd.volatile_load(x)  # error: qd.volatile_load needs an lvalue, an ndarray or field element such as a[i], not a local


@qd.kernel
def atomic_non_lvalue(a: vec):
    for i in range(a.shape[0]):
        qd.atomic_add(a[i] + 1.0, 1.0)  # error: must be an ndarray element such as a[i], a local variable or a kernel-scope variable, not this expression


@qd.kernel
def atomic_on_scalar(a: vec, s: qd.f32):
    for i in range(a.shape[0]):
        qd.atomic_add(s, 1.0)  # error: `s` is a scalar parameter, which is read-only


@qd.kernel
def atomic_i8(a: qd.types.ndarray(dtype=qd.i8, ndim=1)):
    for i in range(a.shape[0]):
        a[0] += 1  # error: atomics need 32- or 64-bit elements


@qd.kernel
def range_from_an_atomic(a: ivec):
    for i in range(qd.atomic_add(a[0], 1)):  # error: the range of a top-level (parallel) loop must be computable
        a[i] = 0


CAPTURED = np.zeros(10, np.float32)


@qd.kernel
def captured_array(a: vec):
    for i in range(a.shape[0]):
        CAPTURED[i] = a[i]  # error: `CAPTURED` is an array from the enclosing Python scope


HUGE_CONSTANT = qd.Vector([1.0, 2.0]).reshape(1, 1, 2)  # a Python-scope array no kernel vector can hold
v3vec = qd.types.ndarray(dtype=qd.math.vec3, ndim=1)


@qd.kernel
def runtime_loop_choice(a: vec, n: qd.i32):
    for i in (range(n) if n > 2 else range(3)):  # error: a conditional loop iterator needs a condition known
        a[i] = 1.0


@qd.kernel
def raw_mod_of_floats(a: vec):
    for i in range(a.shape[0]):
        a[i] = qd.raw_mod(a[i], 2.0)  # error: qd.raw_mod() takes integers


@qd.kernel
def starred_runtime_value(a: vec, n: qd.i32):
    for i in qd.ndrange(*n):  # error: a starred argument must be a tuple of numbers
        a[i] = 1.0


@qd.kernel
def solve_mismatched(a: vec):
    for i in range(a.shape[0]):
        x = qd.solve(qd.math.mat2(1.0, 0.0, 0.0, 1.0), qd.math.vec3(1.0, 2.0, 3.0))  # error: matrix takes a vector of 2
        a[i] = x[0]


@qd.kernel
def svd_in_f16(a: vec):
    for i in range(a.shape[0]):
        u, s, v = qd.svd(qd.math.mat2(1.0, 0.0, 0.0, 1.0), qd.f16)  # error: computes in f32 or f64, not
        a[i] = s[0, 0]


@qd.kernel
def empty_matrix_slice(a: vec):
    for i in range(a.shape[0]):
        m = qd.math.mat3(1.0)
        a[i] = m[2:1, 0].sum()  # error: this slice of a 3x3 matrix is empty


@qd.kernel
def loop_name_not_a_string(a: vec):
    qd.loop_config(name=3)  # error: qd.loop_config(name=...) is a string
    for i in range(a.shape[0]):
        a[i] = 1.0


@qd.kernel
def bit_vectorized_loop(a: vec):
    qd.loop_config(bit_vectorize=True)  # error: bit_vectorize applies to quantized arrays
    for i in range(a.shape[0]):
        a[i] = 1.0


@qd.kernel
def comprehension_of_two_loops(a: vec):
    for i in range(a.shape[0]):
        a[i] = qd.Vector([j * k for j in range(2) for k in range(2)]).sum()  # error: takes one `for` clause


@qd.kernel
def huge_python_vector(a: vec):
    for i in range(a.shape[0]):
        a[i] = HUGE_CONSTANT[0, 0, 0]  # error: cannot be a kernel constant


@qd.kernel
def slice_component_picked_at_run_time(a: v3vec, k: qd.i32):
    for i in range(a.shape[0]):
        a[i][1:3][k] = 1.0  # error: a component of a slice or swizzle of an element is picked with a translation


@qd.kernel
def checkpoint_section(a: vec, flag: qd.types.ndarray(dtype=qd.i32, ndim=0)):
    with qd.checkpoint(0, yield_on=flag):  # error: qd.checkpoint is not supported by this transpiler
        for i in range(a.shape[0]):
            a[i] = 1.0


@qd.kernel
def stream_parallel_in_a_loop(a: vec):
    for i in range(a.shape[0]):
        with qd.stream_parallel():  # error: with statements are not supported here
            a[i] = 1.0


@qd.kernel
def is_active_of_a_field(a: vec):
    for i in range(a.shape[0]):
        a[i] = qd.is_active(a, [i])  # error: qd.is_active takes a pointer or bitmasked SNode


@qd.kernel
def graph_section_alone(a: vec):
    with qd.graph.parallel():  # error: may appear only directly inside a qd.graph.parallel_context()
        for i in range(a.shape[0]):
            a[i] = 1.0


points_ab = qd.Struct.field({"a": qd.f32, "b": qd.f32}, shape=(4,))


@qd.kernel
def anonymous_struct_missing_a_member():
    for i in range(4):
        points_ab[i] = qd.Struct(a=1.0)  # error: the struct value's members (a) are not the element's (a, b)


# ----------------------------------------------------------------------------- graph kernels

flag0 = qd.types.ndarray(dtype=qd.i32, ndim=0)


@qd.kernel
def do_while_outside_a_graph_kernel(a: vec, c: flag0):
    while qd.graph.do_while(c):  # error: qd.graph.do_while requires @qd.kernel(graph=True)
        for i in range(a.shape[0]):
            a[i] += 1.0


@qd.kernel(graph=True)
def do_while_on_a_float_flag(a: vec, c: qd.types.ndarray(dtype=qd.f32, ndim=0)):
    while qd.graph.do_while(c):  # error: the flag of qd.graph.do_while must be a 0-d qd.i32 ndarray
        for i in range(a.shape[0]):
            a[i] += 1.0


@qd.kernel(graph=True)
def do_while_inside_a_loop(a: vec, c: flag0):
    for i in range(a.shape[0]):
        while qd.graph.do_while(c):  # error: is the condition of a `while` at the top level of a kernel
            a[i] += 1.0


@qd.kernel(graph=True)
def do_while_with_nothing_to_repeat(c: flag0):
    while qd.graph.do_while(c):  # error: the body of this qd.graph.do_while does nothing a launch could run
        pass


# ----------------------------------------------------------------------------- sparse fields

dense_cells = qd.field(qd.f32)
qd.root.dense(qd.ij, 4).place(dense_cells)
lists_of_ints = qd.field(qd.i32)
qd.root.dense(qd.i, 4).dynamic(qd.j, 8).place(lists_of_ints)


@qd.kernel
def is_active_of_a_dense_level():
    for i, j in dense_cells:
        dense_cells[i, j] += qd.is_active(dense_cells.parent(), [i, j])  # error: not a dense SNode


@qd.kernel
def append_of_a_pair():
    qd.append(lists_of_ints.parent(), 0, qd.math.vec2(1, 2))  # error: holds 1 value(s) per element, the value has 2


@qd.kernel
def append_without_its_cell():
    lists_of_ints.append(3)  # error: this dynamic field holds a list per cell of a 1-d parent


# ----------------------------------------------------------------------------- real functions

@qd.real_func
def returns_the_wrong_shape(x: qd.f32) -> qd.math.vec3:
    return qd.math.vec2(x, x)  # error: is annotated to return


@qd.kernel
def calls_returns_the_wrong_shape(a: vec):
    for i in range(a.shape[0]):
        a[i] = returns_the_wrong_shape(1.0).x


@qd.real_func
def returns_too_few(x: qd.f32) -> (qd.f32, qd.f32):
    return x  # error: is annotated to return 2 values


@qd.kernel
def calls_returns_too_few(a: vec):
    for i in range(a.shape[0]):
        u, w = returns_too_few(1.0)
        a[i] = u + w


zero_d = qd.field(qd.f32, shape=())


@qd.kernel
def ungrouped_loop_over_0d_field():
    for i in zero_d:  # error: a 0-d field or ndarray has no index to loop over
        zero_d[None] = 1.0


@qd.kernel
def kernel_returns_too_few(a: vec) -> (qd.f32, qd.i32):
    return a[0]  # error: the kernel is annotated to return 2 values


@qd.kernel
def kernel_returns_a_vector_for_a_scalar(a: vec) -> (qd.f32, qd.i32):
    return a[0], qd.Vector([1, 2])  # error: this value is not a scalar


@qd.kernel
def dict_with_number_keys(a: vec):
    for i in range(a.shape[0]):
        d = {1: a[i]}  # error: a dict in a kernel has string keys
        a[i] = 0.0


@qd.kernel
def format_without_its_argument(a: vec):
    for i in range(a.shape[0]):
        print("{} {}".format(a[i]))  # error: format() has no argument 1


@qd.kernel
def static_print_option(a: vec):
    qd.static_print(a, flush=True)  # error: qd.static_print takes sep= and end=, not flush=
    for i in range(a.shape[0]):
        a[i] = 0.0


@qd.kernel
def assume_in_range_short(a: vec):
    for i in range(a.shape[0]):
        a[qd.assume_in_range(i, 0, 0)] = 1.0  # error: qd.assume_in_range(val, base, low, high) takes 4 arguments
