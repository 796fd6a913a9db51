"""User names survive; names reserved in a target get a deterministic suffix."""
import transpiler as qd


@qd.kernel
def names(device: qd.types.ndarray(dtype=qd.f32, ndim=1), shared: qd.f32):
    for main in range(device.shape[0]):
        kernel = device[main]
        half = kernel * 0.5
        buffer = half + shared
        texture = buffer * 2.0
        thread = texture - 1.0
        threadIdx = thread
        qd_value = threadIdx
        device[main] = qd_value
