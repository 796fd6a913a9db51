"""print() in a kernel: printf on CUDA and HIP, debugPrintfEXT on GLSL, a located error on
Metal."""
import transpiler as qd


@qd.kernel
def print_values(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i64):
    for i in range(x.shape[0]):
        print("x[", i, "] =", x[i], "of", n)
