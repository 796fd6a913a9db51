"""The math as Quadrants 1.3.3 defines it. The slow test runs scripts/quadrants_diff.py (every
``qd.math`` function and vector/matrix method, on random and edge inputs, here and in Quadrants'
own venv) where Quadrants is installed; the others pin, on every executor, the definitions that
script found different: ``normalized(eps)``, ``cdiv``, ``vdir``, ``isinf``/``isnan``, and
``frobenius_inner`` in kernels."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd

ROOT = Path(__file__).resolve().parent.parent
f32v3 = qd.types.ndarray(dtype=qd.f32, ndim=2)


@qd.kernel
def normalized_three_ways(v: f32v3, out: qd.types.ndarray(dtype=qd.f32, ndim=3)):
    for i in range(v.shape[0]):
        w = qd.Vector([v[i, 0], v[i, 1], v[i, 2]])
        a, b, c = w.normalized(), w.normalized(1e-3), w.normalized(eps=0.5)
        for k in qd.static(range(3)):
            out[i, 0, k] = a[k]
            out[i, 1, k] = b[k]
            out[i, 2, k] = c[k]


def test_normalized_adds_eps_to_the_norm(executor, rng):
    v = (rng.uniform(-1, 1, (64, 3)) * rng.choice([1e-2, 1.0], (64, 1))).astype(np.float32)
    v[0] = [0.03, 0.04, 0.0]  # the example: Quadrants gives [0.5882, 0.7843]
    out = np.zeros((64, 3, 3), np.float32)
    normalized_three_ways(v, out)
    norm = np.sqrt((v * v).sum(axis=1, keepdims=True))
    for k, eps in enumerate((0.0, 1e-3, 0.5)):
        np.testing.assert_allclose(out[:, k], (1 / (norm + np.float32(eps))) * v, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(out[0, 1, :2], [0.03 / 0.051, 0.04 / 0.051], rtol=1e-6)
    under_the_root = v / np.sqrt((v * v).sum(axis=1, keepdims=True) + 1e-3)  # the old definition
    assert np.abs(out[:, 1] - under_the_root).max() > 0.05


def test_normalized_in_python_scope_is_the_kernels_definition():
    v = qd.Vector([0.03, 0.04])
    np.testing.assert_allclose(v.normalized(1e-3), [0.03 / 0.051, 0.04 / 0.051], rtol=1e-12)
    assert v.normalized(eps=0.5).tolist() == [(1 / (0.05 + 0.5)) * 0.03, (1 / (0.05 + 0.5)) * 0.04]
    with np.errstate(all="raise"):  # the zero vector gives NaN, as in a kernel, and says nothing
        assert np.isnan(qd.Vector([0.0, 0.0]).normalized()).all()
    assert qd.Vector([0.0, 0.0]).normalized(1e-3).tolist() == [0.0, 0.0]


@qd.kernel
def complex_and_tests(z: qd.types.ndarray(dtype=qd.f64, ndim=2), out: qd.types.ndarray(dtype=qd.f64, ndim=2),
                      flags: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(z.shape[0]):
        a = qd.Vector([z[i, 0], z[i, 1]])
        b = qd.Vector([z[i, 2], z[i, 3]])
        q = qd.math.cdiv(a, b)
        d = qd.math.vdir(z[i, 0])
        out[i, 0], out[i, 1], out[i, 2], out[i, 3] = q[0], q[1], d[0], d[1]
        m = qd.Matrix([[z[i, 0], z[i, 1]], [z[i, 2], z[i, 3]]])
        out[i, 4] = m.frobenius_inner(m + 1.0)
        flags[i, 0] = qd.math.isinf(z[i, 4])
        flags[i, 1] = qd.math.isnan(z[i, 4])


def test_complex_division_vdir_isinf_as_quadrants(executor, rng):
    """With f64 data and the default f32 (qd.init's): cdiv rounds its numerator to a vec2 (f32)
    before dividing by the f64 |z2|^2, vdir returns a vec2, isinf sees the value as an f32."""
    z = rng.uniform(-2, 2, (64, 5))
    z[:6, 4] = [np.inf, -np.inf, np.nan, 1e300, 3.5e38, 1.0]
    out, flags = np.zeros((64, 5)), np.zeros((64, 2), np.int32)
    complex_and_tests(z, out, flags)
    x1, y1, x2, y2 = z[:, 0], z[:, 1], z[:, 2], z[:, 3]
    num = np.stack([x1 * x2 + y1 * y2, -x1 * y2 + x2 * y1], axis=1).astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(out[:, :2], num / (x2 * x2 + y2 * y2)[:, None], rtol=1e-13)
    np.testing.assert_allclose(out[:, 2:4], np.stack([np.cos(x1), np.sin(x1)], 1).astype(np.float32), rtol=1e-6,
                               atol=2e-7)
    assert (out[:, 2:4] == out[:, 2:4].astype(np.float32)).all()  # an f32 vector's values
    m = z[:, :4]
    np.testing.assert_allclose(out[:, 4], (m * (m + 1.0)).sum(axis=1), rtol=1e-12)
    assert flags[:6, 0].tolist() == [1, 1, 0, 1, 1, 0] and flags[:6, 1].tolist() == [0, 0, 1, 0, 0, 0]
    assert not flags[6:].any()


def quadrants_python() -> str | None:
    for candidate in (os.environ.get("QD_QUADRANTS_PYTHON"), "/tmp/qvenv/bin/python"):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.mark.slow
def test_every_math_function_and_method_matches_quadrants():
    python = quadrants_python()
    if python is None:
        pytest.skip("no Quadrants 1.3.3 venv: set QD_QUADRANTS_PYTHON to its python, or install it in /tmp/qvenv "
                    "(python -m venv /tmp/qvenv && /tmp/qvenv/bin/pip install quadrants==1.3.3)")
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "quadrants_diff.py"), "--quadrants-python", python],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, "\n".join([ln for ln in lines if ln.endswith(" no") or " no  " in ln] + lines[-3:]
                                           + proc.stderr.splitlines()[-10:])
    summary = lines[-1]
    assert " 0 no" in summary and int(summary.split(" rows")[0]) > 1000, summary


def make_inverse(n: int):
    @qd.kernel
    def inverse_n(m: qd.types.ndarray(ndim=3), out: qd.types.ndarray(ndim=3)):  # (f32 or f64: its arrays')
        for i in range(m.shape[0]):
            a = qd.Matrix([[m[i, r, c] for c in qd.static(range(n))] for r in qd.static(range(n))])
            b = a.inverse()
            for r, c in qd.static(qd.ndrange(n, n)):
                out[i, r, c] = b[r, c]

    return inverse_n


@pytest.mark.parametrize("n, np_t, rtol", [(5, np.float64, 1e-11), (6, np.float32, 2e-4)])
def test_inverse_beyond_4x4_by_elimination_with_pivoting(executor, rng, n, np_t, rtol):
    """5x5 and larger (to 12x12) as Quadrants: Gauss elimination with partial pivoting; the rows of
    a diagonally dominant matrix are shuffled so that it has to pivot."""
    m = rng.uniform(-1, 1, (32, n, n)) + 2 * np.eye(n)
    m = np.stack([x[rng.permutation(n)] for x in m]).astype(np_t)
    out = np.zeros_like(m)
    make_inverse(n)(m, out)
    np.testing.assert_allclose(out, np.linalg.inv(m.astype(np.float64)), rtol=rtol, atol=rtol)


def test_inverse_beyond_12x12_is_a_located_error():
    with pytest.raises(qd.TranspileError, match=r"test_quadrants_diff\.py:\d+:\d+.*`\.inverse\(\)` is for matrices "
                                                r"up to 12x12"):
        qd.translate(make_inverse(13), "cuda", arg_types={"m": qd.types.ndarray(qd.f32, ndim=3),
                                                          "out": qd.types.ndarray(qd.f32, ndim=3)})
