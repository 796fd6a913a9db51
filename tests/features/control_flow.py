"""if/elif/else, while with break, for with continue and a negative step, a ternary."""
import transpiler as qd


@qd.kernel
def control_flow(a: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=1)):
    for i in range(a.shape[0]):
        v = a[i]
        sign = 0
        if v < 0:
            sign = -1
        elif v > 0:
            sign = 1
        steps = 0
        while v > 1:
            if steps >= 20:
                break
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
        for k in range(10, 0, -3):
            if k == 4:
                continue
            steps += k
        out[i] = sign * steps if sign != 0 else -100
