"""Structured control flow: if/elif/else, while, break/continue, serial ranges, ternaries."""
import transpiler as qd


@qd.kernel
def control(a: qd.types.ndarray(dtype=qd.i32, ndim=1), out: qd.types.ndarray(dtype=qd.i32, ndim=2)):
    for i in range(a.shape[0]):
        v = a[i]
        if v < 0:
            out[i, 0] = -1
        elif v == 0:
            out[i, 0] = 0
        else:
            out[i, 0] = 1
        # Collatz steps, capped
        steps = 0
        n = abs(v) + 1
        while n != 1:
            if steps >= 50:
                break
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1
        out[i, 1] = steps
        total = 0
        for k in range(10):
            if k % 3 == 0:
                continue
            total += k
        for k in range(v, v + 20, 3):
            total += k
        for k in range(10, 0, -2):
            total -= k
        out[i, 2] = total
        step = 1 + (i % 3)
        acc = 0
        for k in range(0, 12, step):
            acc += 1
        out[i, 3] = acc
        inside = 0 < v < 100 and not (v % 5 == 0) or v == -7
        out[i, 4] = 1 if inside else 0
        out[i, 5] = qd.select(v > 10, v, 10)
