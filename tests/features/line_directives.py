"""The line_directives option: a `#line` before each new Python line (GLSL enables the
extension that lets it name the file)."""
# options: {"line_directives": True}
import transpiler as qd


@qd.kernel
def line_directives(x: qd.types.ndarray(dtype=qd.f32, ndim=1)):
    for i in range(x.shape[0]):
        v = x[i] * 2.0
        x[i] = v + 1.0
