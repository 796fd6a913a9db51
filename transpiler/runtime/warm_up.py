"""A small kernel the Vulkan runtime translates in the background while the device is being
created: it imports and builds, once per process, what a first kernel call would otherwise
pay for in the caller's thread (the frontend, the hazard checker, the GLSL target, Jinja's
compiled templates, Python's tokenizer), and the parsed source of the block and subgroup
libraries' functions, which any kernel with a block collective inlines."""
import transpiler as qd


@qd.kernel
def warm_up(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i32):
    for i in range(x.shape[0]):
        if i < n:
            x[i] = x[i] * 2.0 + 1.0


def translate_once() -> None:
    from ..frontend.source import parse_function
    from ..lang import blocklib, subgrouplib
    from ..lang.kernel import Func
    from ..pipeline import translate

    translate(warm_up, "glsl", warn=False)
    for library in (subgrouplib, blocklib):
        for value in vars(library).values():
            if isinstance(value, Func):
                parse_function(value.fn)
