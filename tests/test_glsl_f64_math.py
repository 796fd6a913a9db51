"""f64 math on the GLSL target: GLSL declares sin, exp, pow, ... for 32-bit floats only, so
the target brings its own f64 library (transpiler/targets/glsl_f64.py, templates/glsl/f64.j2).
Each function runs on Vulkan (lavapipe) over random inputs spread over its whole range
(log-uniform magnitudes, both signs) and a list of edge cases, within 2 ulp of NumPy.

``python tests/test_glsl_f64_math.py [N]`` prints the table (function, max and median ulp,
edge cases) over N random inputs per function (10^6 by default)."""
from __future__ import annotations

import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import transpiler as qd
from conftest import assert_compiles
from transpiler.errors import ToolchainMissing

f64 = qd.types.ndarray(dtype=qd.f64, ndim=1)


@qd.kernel
def k_sin(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.sin(x[i])


@qd.kernel
def k_cos(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.cos(x[i])


@qd.kernel
def k_tan(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.tan(x[i])


@qd.kernel
def k_asin(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.asin(x[i])


@qd.kernel
def k_acos(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.acos(x[i])


@qd.kernel
def k_atan(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.atan(x[i])


@qd.kernel
def k_exp(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.exp(x[i])


@qd.kernel
def k_log(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.log(x[i])


@qd.kernel
def k_sqrt(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.sqrt(x[i])


@qd.kernel
def k_rsqrt(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.rsqrt(x[i])


@qd.kernel
def k_sinh(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.sinh(x[i])


@qd.kernel
def k_cosh(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.cosh(x[i])


@qd.kernel
def k_tanh(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.tanh(x[i])


@qd.kernel
def k_log2(x: f64, y: f64):
    for i in range(x.shape[0]):
        y[i] = qd.math.log2(x[i])


@qd.kernel
def k_atan2(a: f64, b: f64, y: f64):
    for i in range(a.shape[0]):
        y[i] = qd.atan2(a[i], b[i])


@qd.kernel
def k_pow(a: f64, b: f64, y: f64):
    for i in range(a.shape[0]):
        y[i] = a[i] ** b[i]


INF, NAN = np.inf, np.nan
TINY = 5e-324  # the least subnormal
SPECIAL = [0.0, -0.0, INF, -INF, NAN, TINY, -TINY, 2.2250738585072014e-308, 1e-310, 1.0, -1.0, 0.5, -0.5,
           2.0, 1e-300, -1e-300, 1e300, -1e300, 1.7976931348623157e308, -1.7976931348623157e308, 1e-20]


def _log_uniform(rng, n, lo_exp, hi_exp, signed=True):
    x = 10.0 ** rng.uniform(lo_exp, hi_exp, n)
    return x * rng.choice([-1.0, 1.0], n) if signed else x


def _uniform(rng, n, lo, hi):
    return rng.uniform(lo, hi, n)


def _unit(rng, n):  # the domain of asin / acos: log-uniform near 0, uniform near +-1
    half = n // 2
    return np.concatenate([_log_uniform(rng, half, -300, 0), rng.uniform(-1, 1, n - half)])


# function -> (kernel, NumPy's function, random inputs, extra edge cases)
UNARY = {
    "sin": (k_sin, np.sin, lambda r, n: _log_uniform(r, n, -300, 308),
            [np.pi, np.pi / 2, 1e22, 1e16, 5.0e5, 524287.9, 524288.0, 2.0**1023, 6381956970095103.0 * 2.0**797]),
    "cos": (k_cos, np.cos, lambda r, n: _log_uniform(r, n, -300, 308),
            [np.pi, np.pi / 2, 1e22, 1e16, 5.0e5, 2.0**1023]),
    "tan": (k_tan, np.tan, lambda r, n: _log_uniform(r, n, -300, 308),
            [np.pi, np.pi / 2, np.pi / 4, 1e22, 1e16, 5.0e5, 2.0**1023]),
    "asin": (k_asin, np.arcsin, _unit, [0.5, -0.5, 0.5000000000000001, 0.9999999999999999, 1.0000000000000002]),
    "acos": (k_acos, np.arccos, _unit, [0.5, -0.5, 0.4999999999999999, -0.9999999999999999, 1.0000000000000002]),
    "atan": (k_atan, np.arctan, lambda r, n: _log_uniform(r, n, -300, 308), [1.0, 2.0**60, 2.0**61, 0.0625]),
    "exp": (k_exp, np.exp, lambda r, n: np.concatenate([_log_uniform(r, n // 2, -300, 2.87),
                                                          _uniform(r, n - n // 2, -745.2, 709.8)]),
            [100.0, 709.782712893384, 709.7827128933841, -745.1332191019411, -745.1332191019412, -708.4, -740.0,
             -1e-17, 1e-17]),
    "log": (k_log, np.log, lambda r, n: _log_uniform(r, n, -323, 308, signed=False),
            [1.0000000000000002, 0.9999999999999999, np.sqrt(2.0), 0.7071067811865476, 2.0**-1074, 2.0**-1022]),
    "sqrt": (k_sqrt, np.sqrt, lambda r, n: _log_uniform(r, n, -323, 308, signed=False), [2.0, 4.0]),
    "rsqrt": (k_rsqrt, lambda x: 1.0 / np.sqrt(x), lambda r, n: _log_uniform(r, n, -307, 308, signed=False),
              [2.0, 4.0]),
    "sinh": (k_sinh, np.sinh, lambda r, n: np.concatenate([_log_uniform(r, n // 2, -300, 1.3),
                                                            _uniform(r, n - n // 2, -711, 711)]),
             [22.0, -22.0, 21.999999999999996, 710.4758600739439, 710.475860073944, 1e-8, 0.3]),
    "cosh": (k_cosh, np.cosh, lambda r, n: np.concatenate([_log_uniform(r, n // 2, -300, 1.3),
                                                            _uniform(r, n - n // 2, -711, 711)]),
             [22.0, -22.0, 710.4758600739439, 710.475860073944, 1e-8]),
    "tanh": (k_tanh, np.tanh, lambda r, n: _log_uniform(r, n, -300, 2),
             [22.0, -22.0, 21.999999999999996, 0.55, 1e-8, 19.06]),
    # qd.math.log2 is log(x) / ln 2 (Quadrants' definition): the rounding of the quotient adds
    # up to an ulp to log's
    "log2": (k_log2, np.log2, lambda r, n: _log_uniform(r, n, -323, 308, signed=False), [2.0, 1024.0, 0.5]),
}


def _pow_inputs(rng, n):
    q = n // 4
    base = np.concatenate([_log_uniform(rng, 3 * q, -300, 300, signed=False),
                           -_log_uniform(rng, n - 3 * q, -3, 3, signed=False)])
    expo = np.concatenate([_log_uniform(rng, 2 * q, -3, 3),
                           rng.uniform(-700, 700, q) / np.maximum(np.abs(np.log(base[2 * q:3 * q])), 1e-300),
                           rng.integers(-60, 60, n - 3 * q).astype(np.float64)])
    return base, expo


def _atan2_inputs(rng, n):
    return _log_uniform(rng, n, -300, 300), _log_uniform(rng, n, -300, 300)


def _pairs(values):
    a, b = np.meshgrid(np.asarray(values), np.asarray(values))
    return a.ravel(), b.ravel()


BINARY = {
    "pow": (k_pow, np.power, _pow_inputs,
            _pairs(SPECIAL + [3.0, -3.0, 0.5, 2.5, -2.5, 1e10, 1e-10, 1e16, 9007199254740993.0, 1.0000000000000002])),
    "atan2": (k_atan2, np.arctan2, _atan2_inputs,
              _pairs(SPECIAL + [3.0, -3.0, 1e200, -1e-200, 1e-310, 1.0000000000000002])),
}


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The number of f64 values between a and b (0 for two NaNs, or +0 and -0; inf where only
    one is NaN), through their bits ordered as integers."""
    def ordered(x):  # as uint64, in the order of the values: -0.0 and 0.0 alike
        i = np.ascontiguousarray(x, np.float64).view(np.int64)
        signed = np.where(i < 0, np.int64(-2**63) - i, i)
        return signed.view(np.uint64) ^ np.uint64(2**63)

    oa, ob = ordered(a), ordered(b)
    d = np.where(oa > ob, oa - ob, ob - oa).astype(np.float64)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    d[nan_a & nan_b] = 0
    d[nan_a ^ nan_b] = np.inf
    return d


def test_ulp_distance():
    x = np.array([1.0, 1.0, -0.0, TINY, -TINY, NAN, NAN, INF, 1.0])
    y = np.array([1.0, np.nextafter(1.0, 2.0), 0.0, -TINY, TINY, NAN, 1.0, 1.7976931348623157e308, 1.0 + 4e-16])
    assert list(ulp_distance(x, y)) == [0, 1, 0, 2, 2, 0, INF, 1, 2]


def run_unary(name: str, x: np.ndarray) -> np.ndarray:
    kernel = UNARY[name][0]
    y = np.empty_like(x)
    kernel(x, y)
    return y


def run_binary(name: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    y = np.empty_like(a)
    BINARY[name][0](a, b, y)
    return y


def measure(name: str, n: int, rng) -> dict:
    """Max and median ulp over n random inputs, and the edge cases' worst, for one function."""
    with np.errstate(all="ignore"):
        if name in UNARY:
            _, ref, inputs, edges = UNARY[name]
            x = inputs(rng, n)
            edge = np.array(SPECIAL + edges, np.float64)
            got, want = run_unary(name, x), ref(x)
            edge_got, edge_want = run_unary(name, edge), ref(edge)
            args = (x,)
            edge_args = (edge,)
        else:
            _, ref, inputs, (ea, eb) = BINARY[name]
            a, b = inputs(rng, n)
            got, want = run_binary(name, a, b), ref(a, b)
            edge_got, edge_want = run_binary(name, ea, eb), ref(ea, eb)
            args, edge_args = (a, b), (ea, eb)
    d, de = ulp_distance(got, want), ulp_distance(edge_got, edge_want)
    worst = int(np.argmax(d))
    worst_edge = int(np.argmax(de))
    return {"max": float(d.max()), "median": float(np.median(d)), "edge_max": float(de.max()),
            "worst": tuple(float(v[worst]) for v in args) + (float(got[worst]), float(want[worst])),
            "worst_edge": tuple(float(v[worst_edge]) for v in edge_args)
            + (float(edge_got[worst_edge]), float(edge_want[worst_edge])), "edges": len(de)}


@pytest.fixture(scope="module")
def vulkan():
    pytest.importorskip("vulkan")
    if shutil.which("glslangValidator") is None:
        pytest.skip("needs glslang-tools")
    try:
        qd.init(arch="vulkan")
    except ToolchainMissing as exc:
        pytest.skip(str(exc))
    from transpiler.runtime import current

    device = current()
    if "shaderFloat64" not in getattr(device, "features", {"shaderFloat64"}):
        pytest.skip("the Vulkan device has no shaderFloat64")
    return device


@pytest.mark.slow
@pytest.mark.parametrize("name", [*UNARY, *BINARY])
def test_within_2_ulp_of_numpy(vulkan, name):
    m = measure(name, 2**16, np.random.default_rng(44))
    assert m["max"] <= 2, f"{name}: {m['max']} ulp at {m['worst']} (inputs, got, NumPy)"
    assert m["edge_max"] <= 2, f"{name}: edge case {m['worst_edge']} (inputs, got, NumPy) is {m['edge_max']} ulp off"


@pytest.mark.slow
def test_a_million_inputs_each(vulkan):
    # the bar: 10^6 random inputs per function (about 10 s on lavapipe in all)
    rng = np.random.default_rng(10**6)
    worst = {name: measure(name, 10**6, rng)["max"] for name in [*UNARY, *BINARY]}
    assert max(worst.values()) <= 2, worst


# The f64 closest to a multiple of pi/2 (Kahan, McDonald: 2^-61.5 away), where the reduction
# needs 120 bits of 2/pi past x's exponent, and 2^1023; exact values from mpmath at 3000 bits
# (NumPy's cos gives -4.68716592425462e-19 there, 8 ulp off).
HARDEST = [6381956970095103.0 * 2.0**797, 2.0**1023]
EXACT = {"sin": [1.0, 0.563127779850884], "cos": [-4.687165924254628e-19, -0.826369834614148],
         "tan": [-2.133485385753704e+18, -0.6814476476066215]}


@pytest.mark.parametrize("name", EXACT)
def test_huge_arguments_reduce_exactly(vulkan, name):
    assert ulp_distance(run_unary(name, np.array(HARDEST)), np.array(EXACT[name])).max() <= 1


def test_exp_100_is_finite(vulkan):
    # e^100 overflows f32, as the f32 route it once took did (inf)
    y = run_unary("exp", np.array([100.0, -100.0, 700.0]))
    assert ulp_distance(y, np.exp([100.0, -100.0, 700.0])).max() <= 1


def translate(kernel):
    return qd.translate(kernel, "glsl")


def test_each_helper_only_when_used():
    (sin_src,) = translate(k_sin).sources.values()
    assert "qd_f64_sin(" in sin_src and "qd_f64_rem_pio2(" in sin_src
    assert "qd_f64_kexp" not in sin_src and "qd_f64_klog" not in sin_src and "qd_f64_katan" not in sin_src
    (pow_src,) = translate(k_pow).sources.values()
    assert "qd_f64_klog(" in pow_src and "qd_f64_kexp(" in pow_src and "qd_f64_rem_pio2" not in pow_src
    # declared before use: the double-double layer, then kernels, then the function
    assert pow_src.index("dvec2 qd_f64_two_prod(") < pow_src.index("dvec2 qd_f64_klog(") < \
        pow_src.index("double qd_f64_pow(")
    assert "float(" not in pow_src.split("void main()")[1]  # nothing through f32
    assert translate(k_pow).manifest["requirements"]["f64_functions_in_f32"] == []


@qd.kernel
def k_every(x: f64, y: f64):
    for i in range(x.shape[0]):
        v = x[i]
        y[i] = (qd.sin(v) + qd.cos(v) + qd.tan(v) + qd.asin(v) + qd.acos(v) + qd.atan(v) + qd.atan2(v, 2.0)
                + qd.exp(v) + qd.log(v) + v ** y[i] + qd.sinh(v) + qd.cosh(v) + qd.tanh(v) + qd.sqrt(v))


@pytest.mark.toolchain
def test_every_function_in_one_shader_passes_glslang_and_spirv_val():
    tr = translate(k_every)
    (src,) = tr.sources.values()
    assert src.count("dvec2 qd_f64_two_sum(") == 1  # each helper once, however many functions use it
    assert_compiles("glsl", tr)


def test_translation_is_deterministic():
    assert translate(k_tan).sources == translate(k_tan).sources


@pytest.mark.parametrize("target", ["cuda", "hip"])
def test_other_targets_use_their_own_libm(target):
    (src,) = (s for f, s in qd.translate(k_pow, target).sources.items() if "pow(" in s)
    assert "qd_f64_" not in src and "pow(" in src


def test_msl_still_refuses_f64():
    with pytest.raises(qd.TranspileError, match="f64"):
        qd.translate(k_sin, "msl")


def test_a_function_the_library_lacks_warns_at_its_line(monkeypatch):
    from transpiler.targets import glsl_f64

    monkeypatch.delitem(glsl_f64.F64_FUNCS, "cosh")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tr = qd.translate(k_cosh, "glsl")
    (w,) = [w for w in caught if "computed in f32" in str(w.message)]
    line = k_cosh.fn.__code__.co_firstlineno + 3
    assert f"test_glsl_f64_math.py:{line}:" in str(w.message) and "qd.cosh(x[i])" in str(w.message)
    assert tr.manifest["requirements"]["f64_functions_in_f32"] == ["cosh"]


# mpmath's name of each function, where it differs
MPMATH_NAMES = {"pow": "power"}


def exact_ulp(name: str, n: int, rng) -> float | None:
    """The largest distance from the correctly rounded result (mpmath at 300 bits, where it is
    installed) over n random inputs."""
    try:
        import mpmath
    except ImportError:
        return None
    mpmath.mp.prec = 300
    fn = {"log2": lambda x: mpmath.log(x, 2), "rsqrt": lambda x: 1 / mpmath.sqrt(x)}.get(name) or \
        getattr(mpmath, MPMATH_NAMES.get(name, name))
    args = (UNARY[name][2](rng, n),) if name in UNARY else BINARY[name][2](rng, n)
    got = run_unary(name, *args) if name in UNARY else run_binary(name, *args)

    def rounded(*xs):
        v = fn(*map(mpmath.mpf, xs))
        if not isinstance(v, mpmath.mpf) or mpmath.isnan(v):
            return np.nan
        return float(v) if abs(v) < mpmath.mpf(2) ** 1024 else float(mpmath.sign(v)) * np.inf

    want = np.array([rounded(*(float(a[i]) for a in args)) for i in range(n)])
    return float(ulp_distance(got, want).max())


def main(n: int) -> None:
    qd.init(arch="vulkan")
    rng = np.random.default_rng(2026)
    n_exact = min(n, 20000)
    print(f"{'function':<8} {'max ulp':>8} {'median ulp':>11} {'edge cases':>12} {'max ulp vs exact':>17}   "
          f"(vs NumPy: n = {n} random inputs each; vs exact: {n_exact})")
    for name in [*UNARY, *BINARY]:
        m = measure(name, n, rng)
        ok = "ok" if m["edge_max"] <= 2 else f"max {m['edge_max']:g}"
        exact = exact_ulp(name, n_exact, rng)
        print(f"{name:<8} {m['max']:>8g} {m['median']:>11g} {ok:>6} ({m['edges']:>3}) "
              f"{'-' if exact is None else f'{exact:g}':>17}")
        if m["max"] > 2:
            print(f"         worst: {m['worst']} (inputs, got, NumPy)")
        if m["edge_max"] > 2:
            print(f"         worst edge: {m['worst_edge']} (inputs, got, NumPy)")


if __name__ == "__main__":
    main(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**6)
