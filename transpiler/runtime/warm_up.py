"""Two small kernels a backend translates in the background when it starts (Vulkan: while its
device is created; the CPU executor: while the program goes on to its first call): they
import and build, once per process, what a first kernel call would otherwise pay for in
the caller's thread (the frontend, the hazard checker, the target's emitter, Jinja's
compiled templates, Python's tokenizer), the parsed source of the block and subgroup
libraries' functions, which any kernel with a block collective inlines, and the IR classes
of block-level work (a record compiles its methods on first use, see ir/records.py); where the
Vulkan device is made beside qd.init, the first kernel only (see ``start``)."""
import threading
from collections.abc import Callable

from .. import runtime
from ..lang import blocklib, qd, subgrouplib
from ..lang.kernel import Func
from ..pipeline import translate


@qd.kernel
def warm_up(x: qd.types.ndarray(dtype=qd.f32, ndim=1), n: qd.i32):  # noqa: ANN201 - a kernel's return annotation is its kernel return type
    for i in range(x.shape[0]):
        if i < n:
            x[i] = x[i] * 2.0 + 1.0


@qd.kernel
def warm_up_block(x: qd.types.ndarray(dtype=qd.f32, ndim=1), total: qd.types.ndarray(dtype=qd.f32, ndim=1)):  # noqa: ANN201 - a kernel: no return annotation
    qd.loop_config(block_dim=128)
    for i in range(x.shape[0]):
        s = qd.simt.block.reduce_add(x[i], 128, qd.f32)
        if qd.simt.block.thread_idx() == 0:
            total[1] += s
        total[0] += x[i]  # a reduction's block fold


def translate_once(target: str, folder: str | None) -> None:
    """The two kernels, through the offline cache in ``folder``: that of the qd.init which
    started the thread (a later qd.init may have changed the runtime's by now)."""
    translate_plain(target, folder)
    translate_block(target, folder)


def translate_plain(target: str, folder: str | None) -> None:
    """The elementwise kernel: the frontend, the hazard checker and the target's passes, what
    every first call uses. Through the offline cache, as a first call goes: on a warm disk it
    neither imports Jinja2 nor renders, and leaves the caller's first call the interpreter sooner."""
    translate(warm_up, target, warn=False, offline_cache=folder)


def translate_block(target: str, folder: str | None) -> None:
    """The block and subgroup libraries' parsed functions and the block-level kernel: what only
    a kernel with a block collective uses."""
    from ..frontend.source import parse_function  # noqa: PLC0415 - imported in this thread: its purpose

    for library in (subgrouplib, blocklib):
        for value in vars(library).values():
            if isinstance(value, Func):
                parse_function(value.fn)
    translate(warm_up_block, target, warn=False, offline_cache=folder)


def emitter_once(target: str) -> None:
    """The target's emitter (Jinja2, the target's templates and helpers), which the offline
    cache's hits left unloaded: a kernel new to the cache renders, and paid 18-20 ms of its
    first call for them here (a new saxpy's first call 1 s after qd.init: 27-41 ms, 8-10 with
    them loaded). Last in the thread, after what a cached first call waits for (unless
    ``render_early``, see start); where a translation has rendered already, a millisecond."""
    translate(warm_up, target, warn=False)


_imported: set[str] = set()


def imports(target: str) -> None:
    """What a first call of a new kernel for ``target`` pays for besides its own work (the
    frontend's, the passes' and the target's modules, Jinja2 and the templates, the IR
    classes' methods, compiled on first use), in the caller's thread: a backend whose own
    first build is short does this at qd.init, as Quadrants' import loads its compiler,
    rather than in the first call (a new saxpy's first call on the CPU spent 40-50 of its
    ~90 ms here on it; what remains is the kernel's own 3-6 ms), and the identity of the
    package's code that the offline cache's keys hold (a stat of each file). Once per
    process and target."""
    if target in _imported:
        return
    _imported.add(target)
    emitter_once(target)
    if runtime._offline_cache is not None:
        from ..offline_cache import code_identity  # noqa: PLC0415 - only with an offline cache

        code_identity()


_started: set[str] = set()


def start(target: str, then: Callable[[], object] | None = None, first: Callable[[], object] | None = None,
          beside: Callable[[], object] | None = None, render_early: bool = False) -> None:
    """``first``, ``translate_once``, ``then`` and ``emitter_once`` for ``target`` in a
    background thread, once per process and target; ``beside`` in a second thread from the
    start, which the first waits for before the emitter. Failures are ignored: this only gives
    the first call a head start, and that call reports whatever is wrong.

    ``render_early``, where every first call waits longer for something else (the Vulkan device
    made beside qd.init, 40-100 ms) than the emitter's load takes (about 20 ms), so that no cached
    first call can run meanwhile: the elementwise kernel, then the emitter at once, without
    waiting for ``beside`` (a new kernel called as soon as the device was there found Jinja2
    unloaded: its first call 42 ms, 19 of them rendering), and not the block-level kernel: the
    device is there by then, and that translation (17 ms of the interpreter) ran beside the
    program's first call, which it slowed by 8 ms (a median of 9 runs: 33 -> 25 ms). A kernel with
    a block collective parses the libraries in its own first call instead."""
    if target in _started:
        return
    _started.add(target)
    folder = runtime._offline_cache  # this qd.init's
    helper = None
    if beside is not None:
        helper = threading.Thread(target=_quietly, args=(beside,), daemon=True, name=f"qd-warm-up-{target}-beside")
        helper.start()

    def run() -> None:
        if first is not None:
            _quietly(first)
        if render_early:
            _quietly(translate_plain, target, folder)
            _quietly(emitter_once, target)
        else:
            _quietly(translate_once, target, folder)
        if then is not None:
            _quietly(then)
        if helper is not None:
            # Jinja's import holds the interpreter: not while a cached first call may be running,
            # that is, not before what runs beside is done (as when it ran in this thread).
            helper.join()
        if not render_early:
            _quietly(emitter_once, target)

    threading.Thread(target=run, daemon=True, name=f"qd-warm-up-{target}").start()


def _quietly(fn: Callable, *args) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001
        pass
