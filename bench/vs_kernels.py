"""The kernels bench/vs_quadrants.py runs in both frameworks: one source, spelled as
Quadrants spells it; ``QD_MODULE`` says which package ``qd`` is (transpiler or quadrants)."""
import importlib
import os

qd = importlib.import_module(os.environ.get("QD_MODULE", "transpiler"))

BLOCK = 128
f32v = qd.types.ndarray(dtype=qd.f32, ndim=1)
i32v = qd.types.ndarray(dtype=qd.i32, ndim=1)
u32v = qd.types.ndarray(dtype=qd.u32, ndim=1)
f32m = qd.types.ndarray(dtype=qd.f32, ndim=2)
vec3 = qd.types.vector(3, qd.f32)
v3v = qd.types.ndarray(dtype=vec3, ndim=1)


@qd.kernel
def saxpy(a: qd.f32, x: f32v, y: f32v):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def block_reduce(x: f32v, total: f32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        s = qd.simt.block.reduce_add(x[i], BLOCK, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            qd.atomic_add(total[0], s)


@qd.kernel
def field_sum(x: f32v, total: f32v):
    for i in range(x.shape[0]):
        total[0] += x[i]  # Taichi's everyday reduction: no block work written


@qd.kernel
def histogram(x: u32v, bins: i32v):
    for i in range(x.shape[0]):
        qd.atomic_add(bins[x[i] % 64], 1)


@qd.kernel
def block_scan(x: i32v, y: i32v):
    qd.loop_config(block_dim=BLOCK)
    for i in range(x.shape[0]):
        y[i] = qd.simt.block.inclusive_add(x[i], BLOCK, qd.i32)


RADIX_BLOCK = 256  # a block ranks 8-bit digits: at least 256 threads


@qd.kernel
def radix_rank(keys: u32v, out: u32v):
    qd.loop_config(block_dim=RADIX_BLOCK)
    for i in range(keys.shape[0]):
        bins = qd.simt.block.SharedArray((256,), qd.i32)
        excl = qd.simt.block.SharedArray((256,), qd.i32)
        key = keys[i]
        rank = qd.simt.block.radix_rank_match_atomic_or(key, RADIX_BLOCK, 8, 0, 8, bins, excl)
        out[(i // RADIX_BLOCK) * RADIX_BLOCK + rank] = key


@qd.kernel
def stencil(u: f32m, v: f32m):
    for i, j in qd.ndrange((1, u.shape[0] - 1), (1, u.shape[1] - 1)):
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]


@qd.kernel
def particles(pos: v3v, vel: v3v, dt: qd.f32):
    for i in range(pos.shape[0]):
        v = vel[i] + dt * qd.math.vec3(0.0, -9.8, 0.0)
        p = pos[i] + dt * v
        if p[1] < 0.0:
            p[1] = -p[1]
            v[1] = -v[1]
        pos[i] = p
        vel[i] = v * 0.999


@qd.kernel
def particles_add(pos: v3v, vel: v3v, acc: v3v, dt: qd.f32):
    for i in range(pos.shape[0]):
        vel[i] += acc[i] * dt  # `+=` on the thread's own element: no atomic needed
        pos[i] += vel[i] * dt


@qd.kernel
def kernel_sum(x: f32v) -> qd.f32:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]  # a kernel-scope reduction
    return s


@qd.kernel
def scatter_add(idx: i32v, x: f32v, out: f32v):
    for i in range(x.shape[0]):
        out[idx[i]] += x[i]  # any element, from any thread: atomic


def field_particles(n: int):
    """The particles update in Taichi's everyday spelling: vector fields as module state (made
    after qd.init, per size) and a struct-for over one of them. Returns (pos, vel, step)."""
    pos = qd.Vector.field(3, dtype=qd.f32, shape=n)
    vel = qd.Vector.field(3, dtype=qd.f32, shape=n)

    @qd.kernel
    def step(dt: qd.f32):
        for i in pos:
            v = vel[i] + dt * qd.math.vec3(0.0, -9.8, 0.0)
            p = pos[i] + dt * v
            if p[1] < 0.0:
                p[1] = -p[1]
                v[1] = -v[1]
            pos[i] = p
            vel[i] = v * 0.999

    return pos, vel, step


_COPIES: list = []  # the copies' temporary folders: alive while the kernels may be compiled, removed at exit


def lookback_scan_module():
    """examples/lookback_scan.py (the decoupled look-back scan), importing this framework:
    a copy in a temporary folder when that is not the transpiler (the frameworks read a
    kernel's source from its file, whenever they compile it: the folder lives as long as
    the process)."""
    import importlib.util
    import pathlib
    import tempfile

    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "lookback_scan.py"
    if qd.__name__ != "transpiler":
        text = path.read_text().replace("import transpiler as qd", f"import {qd.__name__} as qd")
        _COPIES.append(tempfile.TemporaryDirectory(prefix="qd-vs-"))
        path = pathlib.Path(_COPIES[-1].name) / "lookback_scan.py"
        path.write_text(text)
    spec = importlib.util.spec_from_file_location("lookback_scan", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
