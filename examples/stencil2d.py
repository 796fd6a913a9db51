"""One Jacobi step of the 2-D heat equation: a 5-point stencil over the interior."""
import transpiler as qd

grid2d = qd.types.ndarray(dtype=qd.f32, ndim=2)


@qd.func
def laplacian(u: qd.template(), i, j):
    return u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]


@qd.kernel
def heat_step(u: grid2d, u_next: grid2d, alpha: qd.f32):
    h, w = u.shape[0], u.shape[1]
    qd.loop_config(block_dim=256)
    for i, j in qd.ndrange((1, h - 1), (1, w - 1)):
        u_next[i, j] = u[i, j] + alpha * laplacian(u, i, j)
