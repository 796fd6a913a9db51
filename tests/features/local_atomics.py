"""qd.atomic_* on a local variable updates it and returns the old value, as Quadrants has it;
on a kernel-scope variable in a parallel loop whose old value is used, a real atomic."""
import transpiler as qd


@qd.kernel
def local_atomics(out: qd.types.ndarray(dtype=qd.i32, ndim=1)) -> qd.i32:
    next_slot = 0
    for i in range(out.shape[0]):
        mine = qd.atomic_add(next_slot, 1)
        budget = 10
        spent = qd.atomic_sub(budget, 3)
        out[i] = mine * 100 + spent * 10 + budget
    return next_slot
