"""PyTorch interop as Quadrants has it: a tensor passed where a kernel takes an ndarray (its own
memory on the CPU, written in place; a strided view run on a copy and written back), a tensor
that requires grad differentiated by ``kernel.grad()`` and ``qd.ad.Tape``, and ``to_torch`` /
``from_torch`` / ``to_dlpack`` of fields and ndarrays. On Vulkan and both CPU executors."""
from __future__ import annotations

import numpy as np
import pytest

import transpiler as qd

torch = pytest.importorskip("torch", reason="PyTorch is installed by scripts/setup.sh toolchains")

vec3 = qd.types.vector(3, qd.f32)
SIN_RTOL = 1e-6  # GLSL's sin of an f64 is only f32-accurate


@qd.kernel
def axpy(a: qd.f32, x: qd.types.ndarray(), y: qd.types.ndarray()):
    for i in x:
        y[i] = a * x[i] + y[i]


@qd.kernel
def scale_rows(m: qd.types.ndarray(dtype=qd.f64, ndim=2), k: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i, j in m:
        m[i, j] = m[i, j] * k[i] + j


@qd.kernel
def normalize(v: qd.types.ndarray(dtype=vec3, ndim=1), lengths: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in v:
        lengths[i] = v[i].norm()
        v[i] = v[i] / lengths[i]


@qd.kernel
def energy(x: qd.types.ndarray(), loss: qd.types.ndarray()):
    for i in x:
        loss[0] += qd.sin(x[i]) * x[i] ** 2


def test_tensors_are_kernel_arguments_written_in_place(executor, rng):
    x = torch.from_numpy(rng.standard_normal(1000).astype(np.float32))
    y = torch.from_numpy(rng.standard_normal(1000).astype(np.float32))
    expected = 2.5 * x.numpy() + y.numpy()
    axpy(2.5, x, y)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)

    m = torch.from_numpy(rng.standard_normal((12, 7)))
    k = torch.from_numpy(rng.integers(-3, 4, 12).astype(np.int32))
    expected = m.numpy() * k.numpy()[:, None] + np.arange(7)
    scale_rows(m, k)
    np.testing.assert_allclose(m.numpy(), expected)

    v = torch.from_numpy(rng.uniform(0.5, 2.0, (64, 3)).astype(np.float32))
    lengths = torch.zeros(64)
    want = np.linalg.norm(v.numpy(), axis=1)
    normalize(v, lengths)
    np.testing.assert_allclose(lengths.numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=1), 1.0, rtol=1e-5)


def test_a_strided_tensor_runs_on_a_copy_written_back(executor, rng):
    base = torch.from_numpy(rng.standard_normal((40, 30)).astype(np.float32))
    before = base.numpy().copy()
    column = base[:, 3]  # a view with stride 30: not contiguous
    x = torch.from_numpy(rng.standard_normal(40).astype(np.float32))
    assert not column.is_contiguous()
    axpy(-1.5, x, column)
    before[:, 3] += -1.5 * x.numpy()
    np.testing.assert_allclose(base.numpy(), before, rtol=1e-6)  # the other columns untouched


def test_kernel_grad_fills_the_tensors_grad(executor, rng):
    x = torch.from_numpy(rng.uniform(-2, 2, 50)).requires_grad_()
    loss = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    energy(x, loss)
    assert x.grad is not None and not x.grad.any()  # allocated zeroed by the call, as in Quadrants
    xs = x.detach().numpy()
    np.testing.assert_allclose(loss.detach().numpy(), [np.sum(np.sin(xs) * xs**2)], rtol=SIN_RTOL)
    loss.grad = torch.ones(1, dtype=torch.float64)
    energy.grad(x, loss)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs**2 + 2 * xs * np.sin(xs), rtol=SIN_RTOL)


def test_a_tape_takes_a_tensor_loss(executor, rng):
    x = torch.from_numpy(rng.uniform(-2, 2, 20)).requires_grad_()
    loss = torch.full((1,), 7.0, dtype=torch.float64, requires_grad=True)
    with qd.ad.Tape(loss=loss):  # zeroes the loss, seeds its .grad with 1 on exit
        energy(x, loss)
    xs = x.detach().numpy()
    np.testing.assert_allclose(loss.detach().numpy(), [np.sum(np.sin(xs) * xs**2)], rtol=SIN_RTOL)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xs) * xs**2 + 2 * xs * np.sin(xs), rtol=SIN_RTOL)


def test_tape_loss_errors():
    x = torch.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="The loss of `Tape` must be a tensor only contains one element"):
        with qd.ad.Tape(loss=torch.ones(2, requires_grad=True)):
            energy(x, torch.ones(2))
    with pytest.raises(RuntimeError, match="please set requires_grad=True for all tensors"):
        with qd.ad.Tape(loss=torch.ones(1)):
            energy(x, torch.ones(1))
    with pytest.raises(RuntimeError, match="The loss of `Tape` must be an ndarray with only one element"):
        with qd.ad.Tape(loss=qd.ndarray(qd.f32, (2,), needs_grad=True)):
            pass


def test_fields_to_and_from_torch(executor, rng):
    f = qd.field(qd.f32, shape=(5, 6))
    values = torch.from_numpy(rng.standard_normal((5, 6)).astype(np.float32))
    f.from_torch(values)
    copied = f.to_torch()
    assert copied.dtype == torch.float32 and torch.equal(copied, values)
    copied += 1  # an independent copy
    assert torch.equal(f.to_torch(), values)

    v = qd.Vector.field(3, qd.f64, shape=(4,))
    m = qd.Matrix.field(2, 3, qd.i32, shape=(4,))
    v.from_torch(torch.arange(12, dtype=torch.float64).reshape(4, 3))
    m.from_numpy(np.arange(24, dtype=np.int32).reshape(4, 2, 3))
    assert v.to_torch().shape == (4, 3) and v.to_torch(keep_dims=True).shape == (4, 3, 1)
    assert torch.equal(m.to_torch(), torch.arange(24, dtype=torch.int32).reshape(4, 2, 3))

    @qd.kernel
    def bump():
        for i, j in f:
            f[i, j] += i * 10 + j

    shared = f.to_torch(copy=False)  # the field's own memory: sees what a later kernel writes
    bump()
    expected = values.numpy() + np.arange(5)[:, None] * 10 + np.arange(6)
    np.testing.assert_allclose(shared.numpy(), expected)
    np.testing.assert_allclose(f.to_numpy(copy=False), expected)
    with pytest.raises(ValueError, match=r"to_torch\(copy=False\): zero-copy is not possible to meta"):
        f.to_torch(device="meta", copy=False)


def test_ndarrays_to_and_from_torch(executor, rng):
    a = qd.ndarray(qd.f32, (100,))
    b = qd.ndarray(qd.f32, (100,))
    xs, ys = rng.standard_normal(100).astype(np.float32), rng.standard_normal(100).astype(np.float32)
    a.from_torch(torch.from_numpy(xs))
    b.from_numpy(ys)
    axpy(3.0, a, b)
    out = b.to_torch()
    np.testing.assert_allclose(out.numpy(), 3.0 * xs + ys, rtol=1e-6)
    if executor == "vulkan":  # the executor keeps the ndarray on its device: no memory to share
        with pytest.raises(ValueError, match=r"to_dlpack\(\): this executor keeps the ndarray on its device"):
            b.to_dlpack()
        with pytest.raises(ValueError, match=r"to_numpy\(copy=False\): this executor keeps the ndarray on its"):
            b.to_numpy(copy=False)
        assert b.to_torch(copy=None).data_ptr() != out.data_ptr()
    else:
        via_dlpack = torch.utils.dlpack.from_dlpack(b.to_dlpack())
        axpy(1.0, a, b)  # shared memory: the capsule's tensor sees the second launch
        np.testing.assert_allclose(via_dlpack.numpy(), 4.0 * xs + ys, rtol=1e-6)


def test_a_sparse_field_has_no_memory_to_share():
    sparse = qd.field(qd.f32)
    qd.root.pointer(qd.i, 4).dense(qd.i, 2).place(sparse)
    sparse[3] = 2.0
    assert sparse.to_torch().tolist() == [0, 0, 0, 2.0, 0, 0, 0, 0] == sparse.to_numpy(copy=None).tolist()
    with pytest.raises(ValueError, match=r"to_numpy\(copy=False\): a sparse field or a dtype conversion needs a copy"):
        sparse.to_numpy(copy=False)
    with pytest.raises(ValueError, match=r"to_dlpack\(\): a sparse field's inactive elements have no memory"):
        sparse.to_dlpack()


def test_tensors_numpy_cannot_hold_are_named():
    with pytest.raises(TypeError, match=r"axpy\(\): `x`: a torch tensor of torch.bfloat16 has no NumPy equivalent"):
        axpy(1.0, torch.ones(4, dtype=torch.bfloat16), torch.ones(4))


def test_lang_util():
    assert qd.lang.util.has_pytorch()
    assert qd.lang.util.to_numpy_type(qd.f16) is np.float16
    assert qd.lang.util.to_pytorch_type(qd.u8) is torch.uint8
