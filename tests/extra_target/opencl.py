"""An OpenCL C 2.0 target defined outside the package, to prove what docs/adding-a-target.md
says a new target needs: a dialect (spelling tables), a target description (capabilities,
signature, manifest), templates in its own folder, and a compile check, all registered with
``transpiler.targets.register`` - no file of the package is edited.

It is deliberately small: no subgroups, f16 or f64, no real function parameters passed
by reference (each a located error), 32-bit atomics only; barriers, block votes (emulated
by the shared pass), shared memory, atomics with CAS loops and the C++ family's helpers
work as on the built-in targets."""
from __future__ import annotations

from pathlib import Path

from transpiler.errors import TranspileError
from transpiler.ir import nodes as ir
from transpiler.ir import types as T
from transpiler.targets.context import TranslationContext
from transpiler.targets.cxx import CXX_KEYWORDS, CxxDialect
from transpiler.targets.renderer import Renderer
from transpiler.targets.target import Capabilities, Target, element_entry, param_role

HERE = Path(__file__).resolve().parent
TYPES = {"bool": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long", "u8": "uchar",
         "u16": "ushort", "u32": "uint", "u64": "ulong", "f32": "float"}
FLOAT_FUNCS = {
    "sqrt": "sqrt", "rsqrt": "rsqrt", "exp": "exp", "log": "log", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "floor": "floor", "ceil": "ceil", "round": "rint", "trunc": "trunc", "abs": "fabs", "atan2": "atan2",
    "pow": "pow", "min": "fmin", "max": "fmax",
}
ATOMIC_FUNCS = {"add": "atomic_add", "min": "atomic_min", "max": "atomic_max", "and": "atomic_and",
                "or": "atomic_or", "xor": "atomic_xor", "exchange": "atomic_xchg", "cas": "atomic_cmpxchg"}
ADDRESS_SPACES = {"global": "__global", "shared": "__local"}
ALL_MEMORY = "CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE"
OPENCL_WORDS = frozenset("""
    kernel __kernel global __global local __local constant __constant private __private generic __generic
    read_only write_only read_write half uchar ushort uint ulong image1d_t image2d_t image3d_t sampler_t event_t
    get_global_id get_local_id get_group_id get_local_size get_num_groups barrier mem_fence restrict
""".split()) | frozenset(f"{b}{n}" for b in "char uchar short ushort int uint long ulong float double".split()
                         for n in (2, 3, 4, 8, 16))


class OpenclDialect(CxxDialect):
    name = "opencl"
    types = TYPES
    int_suffix = {"i32": "", "u32": "u", "i64": "l", "u64": "ul"}
    reserved = CXX_KEYWORDS | OPENCL_WORDS | frozenset(FLOAT_FUNCS.values())
    thread_index = {
        "thread_idx": "(int)get_local_id(0)",
        "block_idx": "(int)get_group_id(0)",
        "block_dim": "(int)get_local_size(0)",
        "grid_dim": "(int)get_num_groups(0)",
        "global_thread_idx": "(int)get_global_id(0)",
        "grid_stride": "(int)(get_local_size(0) * get_num_groups(0))",
    }
    barriers = {"block": (f"barrier({ALL_MEMORY});",)}
    fences = {scope: (f"atomic_work_item_fence({ALL_MEMORY}, memory_order_seq_cst, memory_scope_{s});",)
              for scope, s in (("subgroup", "work_group"), ("block", "work_group"), ("device", "device"))}
    inline = "static inline"
    buffer_param = "__global {type}* {name}"
    fmod = {"f32": "fmod"}
    copysign = {"f32": "copysign"}

    def cast(self, text: str, t: T.DType) -> str:
        return f"({self.types[t.name]})({text})"  # C has no functional casts

    def special_float(self, v: float, t: T.DType) -> str:
        return {"inf": "INFINITY", "-inf": "(-INFINITY)", "nan": "NAN"}[repr(v)]

    def math(self, r: Renderer, e: ir.Math, args: list[str]) -> str:
        t = e.args[0].type
        if e.fn == "isnan":
            return f"isnan({args[0]})"
        if t.is_float:
            return f"{FLOAT_FUNCS[e.fn]}({', '.join(args)})"
        if e.fn == "ffs":
            return f"{r.helper('ffs', t)}({args[0]})"
        fn = {"popcnt": "popcount"}.get(e.fn, e.fn)
        # OpenCL's abs, popcount and clz return unsigned or the argument's type: name the result's.
        return f"({self.types[e.type.name]}){fn}({', '.join(args)})"

    def bitcast(self, text: str, src: T.DType, dst: T.DType) -> str:
        return f"as_{self.types[dst.name]}({text})"

    def shared_decl(self, r: Renderer, array: ir.SharedArray, name: str) -> str:
        size = " * ".join(str(n) for n in array.type.shape)
        return f"__local {r.type(array.type.dtype)} {name}[{size}];"

    def volatile_load(self, r: Renderer, e: ir.VolatileLoad, ref: str) -> str:
        return f"*(volatile {ADDRESS_SPACES[ir.space_of(e.array)]} {r.type(e.type)}*)&{ref}"

    def atomic_table(self, op: str, t: T.DType, space: str) -> str | None:
        if t.name in ("i32", "u32"):
            return "cas" if op == "mul" else "native"
        if t.name == "f32":
            return "native" if op == "exchange" else ("cas" if op in ("add", "mul", "min", "max") else None)
        return None  # 64-bit atomics need cl_khr_int64_*_atomics, which this dialect leaves out

    def atomic_name(self, op: str, t: T.DType, space: str, loc: ir.Loc | None = None) -> str:
        if op not in ATOMIC_FUNCS:
            raise TranspileError(f"qd.atomic_{op} on {t.name} is not supported on the {self.name} target", loc)
        return ATOMIC_FUNCS[op]

    def atomic(self, r: Renderer, e: ir.Atomic, ref: str, value: str, expected: str | None) -> str:
        fn = self.atomic_name(e.op, e.type, ir.space_of(e.array), e.loc)
        pointer = f"(volatile {ADDRESS_SPACES[ir.space_of(e.array)]} {r.type(e.type)}*)&{ref}"
        args = [value] if expected is None else [expected, value]
        return f"{fn}({pointer}, {', '.join(args)})"


class OpenclRenderer(Renderer):
    def function(self, fn: ir.Function):
        by_reference = [*fn.outputs, *fn.inouts]
        if by_reference:
            raise TranspileError(f"a @qd.real_func with parameters passed by reference (a vector or struct result, "
                                 f"qd.ref, random numbers) is not supported on the opencl target: "
                                 f"{OpenclTarget.why_not['references']}", fn.loc)
        return super().function(fn)


class OpenclTarget(Target):
    name = "opencl"
    title = "OpenCL C"
    dialect = OpenclDialect()
    caps = Capabilities(f64=False, subgroups=False, references=False)
    why_not = {"f64": "this dialect leaves out cl_khr_fp64",
               "references": "C has no references (this dialect does not pass pointers instead)",
               "system_scope": "OpenCL C has no memory scope beyond the device",
               "recursion": "OpenCL C forbids recursion"}
    file_ext = ".cl"
    module_template = "opencl/module.cl.j2"
    helper_templates = ("opencl/helpers.j2", "cxx/helpers.j2")  # the C++ family's integer helpers are C too
    template_dirs = (str(HERE / "templates"),)
    checker = "opencl_check"
    renderer_class = OpenclRenderer

    def language(self, ctx: TranslationContext) -> str:
        return "OpenCL C 2.0 (clang -cl-std=CL2.0)"

    def signature(self, r: Renderer, ctx: TranslationContext, task: ir.Task) -> list[str]:
        out = []
        for p in ctx.kernel.params:
            if p.is_array:
                out.append(f"__global {r.type(p.type.dtype, p.loc)}* {ctx.names.of(p)}")
                out.extend(f"int {ctx.names.shape(p, d)}" for d in range(p.type.passed_extents))
            else:
                # A kernel argument cannot be a bool: it travels as an int.
                ctype = "int" if p.type is T.bool_ else r.type(p.type, p.loc)
                out.append(f"{ctype} {ctx.names.of(p)}")
        return out

    def param_manifest(self, ctx: TranslationContext) -> list[dict]:
        out, arg = [], 0
        for p in ctx.kernel.params:
            if p.is_array:
                out.append({"name": p.name, "kind": "ndarray", "dtype": p.type.dtype.name, "ndim": p.type.ndim,
                            **element_entry(p), **param_role(p), "arg_index": arg,
                            "shape_arg_indices": list(range(arg + 1, arg + 1 + p.type.passed_extents))})
                arg += 1 + p.type.passed_extents
            else:
                out.append({"name": p.name, "kind": "scalar", "dtype": p.type.name, **param_role(p), "arg_index": arg})
                arg += 1
        return out

    def requirements(self, ctx: TranslationContext) -> dict:
        return {"opencl_c": "2.0", "extensions": []}
