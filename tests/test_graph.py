"""Quadrants' graph kernels: ``@qd.kernel(graph=True)`` and ``while qd.graph.do_while(flag):``
(nested, beside plain top-level loops, the flag a parameter, a data-oriented member or set by
the kernel when it converges), run on Vulkan and the CPU executors against NumPy, as the
user guide's graph page writes them; and the mistakes, located."""
import warnings

import numpy as np
import pytest

import transpiler as qd

from conftest import target_names

F1 = qd.types.ndarray(qd.f32, ndim=1)
I0 = qd.types.ndarray(qd.i32, ndim=0)


@qd.kernel(graph=True)
def iterate(x: F1, counter: I0):
    while qd.graph.do_while(counter):
        for i in range(x.shape[0]):
            x[i] = x[i] * 0.5 + 1.0
        counter[()] = counter[()] - 1


@qd.kernel(graph=True)
def nested(x: qd.types.ndarray(qd.i32, ndim=1), outer: I0, inner: I0):
    for i in range(x.shape[0]):
        x[i] = x[i] + 100
    while qd.graph.do_while(outer):
        inner[()] = 5
        while qd.graph.do_while(inner):
            for i in range(x.shape[0]):
                x[i] = x[i] + i
            inner[()] = inner[()] - 1
        outer[()] = outer[()] - 1
    for i in range(x.shape[0]):
        x[i] = -x[i]


@qd.kernel(graph=True)
def converge(x: F1, target: qd.f32, keep_going: I0, rounds: I0):
    while qd.graph.do_while(keep_going):
        for i in range(x.shape[0]):
            x[i] = 0.5 * (x[i] + target / x[i])     # Newton's square root
        keep_going[()] = 0
        for i in range(x.shape[0]):
            if abs(x[i] * x[i] - target) > 1e-3 * target:
                keep_going[()] = 1
        rounds[()] += 1


@qd.data_oriented
class Solver:
    def __init__(self, n: int):
        self.x = qd.ndarray(qd.f32, shape=(n,))
        self.steps = qd.ndarray(qd.i32, shape=())

    @qd.kernel(graph=True)
    def run(self, scale: qd.f32):
        while qd.graph.do_while(self.steps):
            for i in range(self.x.shape[0]):
                self.x[i] += scale
            self.steps[()] -= 1


def test_do_while_repeats_the_loop_body_until_the_counter_is_zero(executor, rng):
    x = rng.standard_normal(300).astype(np.float32)
    want = x.copy()
    n = int(rng.integers(3, 9))
    for _ in range(n):
        want = want * np.float32(0.5) + np.float32(1)
    counter = np.array(n, np.int32)
    iterate(x, counter)
    np.testing.assert_allclose(x, want, rtol=1e-6)
    assert counter == 0


def test_nested_loops_beside_plain_loops_and_device_resident_flags(executor, rng):
    x = rng.integers(-50, 50, 64).astype(np.int32)
    outer, inner = qd.ndarray(qd.i32, shape=()), qd.ndarray(qd.i32, shape=())
    outer.from_numpy(np.array(3, np.int32))
    want = -(x + 100 + 3 * 5 * np.arange(64, dtype=np.int32))
    nested(x, outer, inner)
    np.testing.assert_array_equal(x, want)
    assert outer.to_numpy() == 0 and inner.to_numpy() == 0


def test_a_flag_the_kernel_clears_when_it_converges(executor, rng):
    target = float(rng.uniform(2, 50))
    x = (rng.random(100) * 40 + 1).astype(np.float32)
    t, want, n = np.float32(target), x.copy(), 0
    while True:                               # the same rounds in NumPy
        want = np.float32(0.5) * (want + t / want)
        n += 1
        if not np.any(np.abs(want * want - t) > np.float32(1e-3) * t):
            break
    keep_going, rounds = np.array(0, np.int32), np.array(0, np.int32)  # a do-while: the body runs first
    converge(x, target, keep_going, rounds)
    np.testing.assert_allclose(x, want, rtol=1e-6)
    assert keep_going == 0 and rounds == n and n >= 2


def test_a_data_oriented_member_as_the_flag(executor, rng):
    s = Solver(32)
    start = rng.standard_normal(32).astype(np.float32)
    s.x.from_numpy(start)
    s.steps.from_numpy(np.array(4, np.int32))
    s.run(0.25)
    np.testing.assert_allclose(s.x.to_numpy(), start + 1.0, rtol=1e-6)


KINDS = ("pt", "ee")


@qd.kernel(graph=True)
def contacts(pt: F1, ee: F1, total: F1, steps: I0):
    while qd.graph.do_while(steps):
        for i in range(total.shape[0]):                # serial before the fork: feeds both sections
            total[i] = 0.0
        with qd.graph.parallel_context():
            for kind in qd.static(KINDS):              # one section per kind
                with qd.graph.parallel():
                    for i in range(pt.shape[0]):
                        if qd.static(kind == "pt"):
                            pt[i] = pt[i] * 2.0
                        else:
                            ee[i] = ee[i] + 1.0
        for i in range(total.shape[0]):                # after the join
            total[i] = pt[i] + ee[i]
        steps[()] -= 1


def test_parallel_sections_run_as_independent_sections(executor, rng):
    pt = rng.standard_normal(50).astype(np.float32)
    ee = rng.standard_normal(50).astype(np.float32)
    want_pt, want_ee = pt.copy(), ee.copy()
    for _ in range(3):
        want_pt, want_ee = want_pt * np.float32(2), want_ee + np.float32(1)
    total = np.zeros(50, np.float32)
    contacts(pt, ee, total, np.array(3, np.int32))
    np.testing.assert_array_equal(pt, want_pt)
    np.testing.assert_array_equal(ee, want_ee)
    np.testing.assert_array_equal(total, want_pt + want_ee)


@qd.kernel(gpu_graph=True)  # Genesis' spelling of graph=True
def old_spelling(x: F1, c: I0):
    while qd.graph_do_while(c):
        for i in range(x.shape[0]):
            x[i] += 1.0
        c[()] = c[()] - 1


def test_the_flat_spelling_warns_and_loops_the_same():
    # (the located errors of graph kernels are in bad_kernels.py)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        tr = qd.translate(old_spelling, "glsl")
    assert any(issubclass(w.category, DeprecationWarning) and "use qd.graph.do_while" in str(w.message) for w in seen)
    assert tr.manifest["loops"] == [{"first": 0, "stop": 2, "flag": "c", "parent": None}]


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("target", target_names())
def test_graph_kernels_compile(target):
    from transpiler.toolchains import check_sources

    for kernel, targs in ((iterate, {}), (nested, {}), (converge, {}), (Solver(8).run, {}), (contacts, {})):
        tr = qd.translate(kernel, target, template_args=targs, warn=False)
        for verdict in check_sources(target, tr.sources, tr.manifest):
            assert verdict.ok, f"{verdict.tool} rejected {verdict.file}:\n{verdict.message}"
