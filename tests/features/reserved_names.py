"""User names that are reserved in some target keep their spelling with a suffix there."""
import transpiler as qd


@qd.kernel
def reserved_names(input: qd.types.ndarray(dtype=qd.f32, ndim=1), output: qd.types.ndarray(dtype=qd.f32, ndim=1),
                   half: qd.f32):
    for main in range(input.shape[0]):
        kernel = input[main] * half
        vec2 = kernel + 1.0
        texture = vec2 - 0.5
        device = texture * 2.0
        output[main] = device
