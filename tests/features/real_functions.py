"""@qd.real_func: one function per signature in the target source, called rather than
inlined; it may return from anywhere, and receives the kernel's ndarrays it uses (and their
extents) as extra parameters where the target does not make them globals."""
import transpiler as qd


@qd.real_func
def smoothstep(edge0: qd.f32, edge1: qd.f32, x: float) -> qd.f32:
    t = (x - edge0) / (edge1 - edge0)
    if t < 0.0:
        return 0.0
    if t > 1.0:
        return 1.0
    return t * t * (3.0 - 2.0 * t)


@qd.real_func
def first_above(grid: qd.types.ndarray(dtype=qd.f32, ndim=2), row: qd.i32, level: qd.f32) -> qd.i32:
    for j in range(grid.shape[1]):
        if grid[row, j] > level:
            return j
    return -1


@qd.real_func
def deposit(hist: qd.types.ndarray(), bin: qd.i32):
    if bin < 0:
        return
    qd.atomic_add(hist[bin], 1)


@qd.func
def classify(grid, row, level):
    return first_above(grid, row, level)


@qd.kernel
def real_functions(grid: qd.types.ndarray(dtype=qd.f32, ndim=2), hist: qd.types.ndarray(dtype=qd.i32, ndim=1),
                   out: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(grid.shape[0]):
        j = classify(grid, i, 0.5)
        deposit(hist, j)
        out[i] = smoothstep(0.0, 1.0, grid[i, 0]) + smoothstep(-1.0, 1.0, grid[i, 1])
