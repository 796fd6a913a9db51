"""GLSL to SPIR-V inside this process, for the Vulkan runtime's first call of a kernel.

glslangValidator starts by building glslang's built-in symbol tables, about 0.16 s a run
here, which was most of a new kernel's first call. The same compiler is linked once from
glslang's static libraries (Debian's glslang-dev) and the C++ compiler the CPU executors
use into a small shared library in the build cache; a shader then compiles in a few
milliseconds. Where glslang-dev or a compiler is missing, ``compile_in_process`` returns
None and the runtime runs glslangValidator as before (which also reports errors: a shader
this compiler refuses is compiled again there for the located message)."""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
from pathlib import Path

from .. import cache
from .cpu_emulator import build_lock, building, cache_root, compiler_id, digest

SOURCE = Path(__file__).with_name("spirv_compiler.cpp")
LIBDIR = Path("/usr/lib/x86_64-linux-gnu")
# glslang and its SPIR-V back end, whole; the rest only for what they pull in.
WHOLE = ["libglslang.a", "libSPIRV.a", "libglslang-default-resource-limits.a"]
PARTS = ["libMachineIndependent.a", "libGenericCodeGen.a", "libOSDependent.a", "libOGLCompiler.a",
         "libSPIRV-Tools-opt.a", "libSPIRV-Tools.a"]

_load_lock = threading.Lock()     # building or opening the library
_compile_lock = threading.Lock()  # glslang's process state is not thread-safe
_key_lock = threading.Lock()      # computing the library's identity
_library: ctypes.CDLL | None = None
_key_memo: tuple | None = None
_tried = False


def _archives() -> list[Path] | None:
    found = [LIBDIR / name for name in WHOLE + PARTS]
    if not all(p.is_file() for p in found) or not Path("/usr/include/glslang/Public/ShaderLang.h").is_file():
        return None
    return found


def _key() -> tuple[str, list[Path], str] | None:
    """(the library's identity, its archives, the C++ compiler), or None where it cannot be
    built: what a SPIR-V cache key needs, without opening the library (a disk hit then never
    waits for that, or for the warm-up thread holding the load lock)."""
    global _key_memo
    with _key_lock:
        if _key_memo is None:
            _key_memo = _identify()
    return None if _key_memo[0] is None else _key_memo


def _identify() -> tuple:
    archives = _archives()
    cxx = shutil.which(os.environ.get("CXX") or "g++") or shutil.which("clang++")
    if archives is None or cxx is None or not SOURCE.is_file():
        return (None,)
    stamps = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in archives]
    return (digest("spirv", SOURCE.read_text(), compiler_id(cxx), *stamps), archives, cxx)


def _load() -> ctypes.CDLL | None:
    """The library, built on first use (None where it cannot be)."""
    global _library, _tried
    if _tried:
        return _library
    _tried = True
    found = _key()
    if found is None:
        return None
    key, archives, cxx = found
    final = cache_root() / f"glslang-{key}"
    lib = final / "libqd_glslang.so"
    if lib.exists():
        cache.touch(final)
    else:
        try:
            with build_lock(final):  # one process builds it; another (a pytest-xdist worker) waits, then finds it
                if not lib.exists():
                    with building(final, "glslang-") as tmp:
                        whole = [str(p) for p in archives[:len(WHOLE)]]
                        parts = [str(p) for p in archives[len(WHOLE):]]
                        cmd = [cxx, "-std=c++17", "-O2", "-fPIC", "-shared", str(SOURCE), "-o",
                               str(tmp / lib.name), "-Wl,--whole-archive", *whole, "-Wl,--no-whole-archive",
                               *parts, "-pthread"]
                        if subprocess.run(cmd, capture_output=True).returncode != 0:
                            raise OSError("the in-process glslang library did not build")
        except OSError:
            return None
    try:
        library = ctypes.CDLL(str(lib))
    except OSError:
        return None
    library.qd_glsl_to_spirv.restype = ctypes.POINTER(ctypes.c_uint32)
    library.qd_glsl_to_spirv.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                                         ctypes.POINTER(ctypes.c_char_p)]
    library.qd_glsl_free.argtypes = [ctypes.c_void_p]
    _library = library
    return library


_WARM_UP = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"


def fill_builtins() -> None:
    """Build or load the library and fill glslang's built-in symbol tables (about 0.25 s, the
    first shader's cost): the Vulkan backend runs this in its warm-up thread (runtime.warm_up),
    where ctypes lets go of the GIL, beside the device's creation."""
    compile_in_process(_WARM_UP)


def identity() -> str | None:
    """What SPIR-V this compiler makes depends on (None when there is none): a cache key part."""
    found = _key()
    return None if found is None else found[0]


def compile_in_process(text: str) -> bytes | None:
    """SPIR-V for one compute shader, or None (no in-process compiler, or it refused the
    shader: the caller's glslangValidator then says why, at the Python line)."""
    with _load_lock:
        library = _load()
    if library is None:
        return None
    with _compile_lock:
        words, log = ctypes.c_size_t(), ctypes.c_char_p()
        out = library.qd_glsl_to_spirv(text.encode(), ctypes.byref(words), ctypes.byref(log))
        try:
            if not out:
                return None
            return ctypes.string_at(out, 4 * words.value)
        finally:
            library.qd_glsl_free(ctypes.cast(out, ctypes.c_void_p))
            if log:
                library.qd_glsl_free(ctypes.cast(log, ctypes.c_void_p))
