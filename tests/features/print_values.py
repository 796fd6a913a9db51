"""print() in a kernel: on every target, a record in the print buffer the manifest's
`prints` entry describes (the host formats it after the launch)."""
import transpiler as qd


@qd.kernel
def print_values(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i64):
    for i in range(x.shape[0]):
        print("x[", i, "] =", x[i], "of", n)
