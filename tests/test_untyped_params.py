"""``transpiler emit FILE`` without a run: untyped ndarrays typed from how the kernel uses
them (transpiler/frontend/param_inference.py), ambiguity and qd.template() values as errors
naming the --template flag, and a chosen type never named in an error without its origin.
The programs (tests/untyped/) are ours, modelled on Genesis's and Taichi's kernels; each
inferable kernel has an annotated twin (``NAME_typed``) that the inferred one must equal:
the same source on every target, and the same results on random data."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import transpiler as qd
from conftest import load_module
from transpiler.errors import TranspileError
from transpiler.frontend.param_inference import parse_array_spec, untyped_params

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "untyped"
ALL = ("cuda", "hip", "glsl", "msl")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "transpiler", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT)


def program(name: str):
    return load_module(PROGRAMS / f"{name}.py")


def inferred_kernel(kernel):
    """``kernel`` annotated with the types inferred for it: the same code, so the same body."""
    inferred = untyped_params(kernel, {}, {})
    fn = kernel.fn
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__annotations__ = {**fn.__annotations__, **{n: qd.types.ndarray(dtype=i.ann.dtype, ndim=i.ann.ndim)
                                                      for n, i in inferred.items()}}
    return qd.kernel(copy), inferred


def same_source(untyped, typed) -> None:
    """The untyped kernel, translated with its inferred types, is its annotated twin's source."""
    inferred = {n: i.ann for n, i in untyped_params(untyped, {}, {}).items()}
    for target in ALL:
        got = qd.translate(untyped, target, arg_types=inferred).sources
        want = qd.translate(typed, target).sources
        def plain(text: str) -> str:  # the twin's name and lines are its own
            return re.sub(r"(\w+\.py):\d+", r"\1:N", re.sub(rf"\b{typed.__name__}\b", untyped.__name__, text))

        assert {k: plain(v) for k, v in got.items()} == {plain(k): plain(v) for k, v in want.items()}, target


# ----------------------------------------------------------------------------- the shapes

def test_an_untyped_index_array_is_i32():
    """Genesis's envs_idx: was "an index must be an integer, not f32" (an f32 nobody wrote)."""
    r = cli("emit", PROGRAMS / "genesis_envs.py", "--target", "cuda", "--kernel", "set_dofs_velocity",
            "--kernel", "reset_normals")
    assert r.returncode == 0, r.stderr
    assert ("genesis_envs.py:11: note: ndarray `envs_idx` of set_dofs_velocity is typed by the call; translated as "
            "i32, 1-d: used as an index at genesis_envs.py:13") in r.stderr
    assert "`dofs_idx` of set_dofs_velocity is typed by the call; translated as i32, 1-d" in r.stderr
    # through a local bound to an element (i_b = envs_idx[i_b_]), as Genesis writes it
    assert "`envs_idx` of reset_normals is typed by the call; translated as i32, 1-d: used as an index at " \
           "genesis_envs.py:20" in r.stderr
    assert "`normals` of reset_normals is typed by the call; translated as f32, 2-d: assigned a float" in r.stderr
    manifests = [json.loads(m) for m in re.findall(r"^\{\n  \"kernel\".*?^\}$", r.stdout, re.S | re.M)]
    assert manifests[0]["assumed"] == {"velocity": "f32:2", "dofs_idx": "i32:1", "envs_idx": "i32:1"}
    m = program("genesis_envs")
    same_source(m.set_dofs_velocity, m.set_dofs_velocity_typed)
    same_source(m.reset_normals, m.reset_normals_typed)


def test_a_list_assigned_makes_a_vector_of_its_length():
    """Taichi's grid_v[i, j] = [0, 0]: was "`tuple` is not a value that can be used at run time"."""
    r = cli("emit", PROGRAMS / "taichi_grid.py", "--target", "glsl", "--kernel", "reset_grid", "--kernel",
            "seed_grid")
    assert r.returncode == 0, r.stderr
    assert ("taichi_grid.py:8: note: ndarray `grid_v` of reset_grid is typed by the call; translated as vec2, 2-d: "
            "assigned a list of 2 at taichi_grid.py:10") in r.stderr
    assert "`grid_m` of reset_grid is typed by the call; translated as f32, 2-d: nothing in the kernel says which, " \
           "and f32 is the default" in r.stderr
    assert "`grid_m` of seed_grid is typed by the call; translated as f32, 2-d: combined with a float" in r.stderr
    m = program("taichi_grid")
    same_source(m.reset_grid, m.reset_grid_typed)
    same_source(m.seed_grid, m.seed_grid_typed)


def test_a_vector_method_takes_its_length_from_another_use():
    """Taichi's dc = dyef[i, j]; dc.norm(): was "`dc` is a f32 scalar here"; the length comes
    from dc += ... * qd.Vector([r, g, b]); with no other use it is an error naming the flag."""
    r = cli("emit", PROGRAMS / "taichi_dye.py", "--target", "cuda", "--kernel", "apply_dye")
    assert r.returncode == 0, r.stderr
    assert ("taichi_dye.py:8: note: ndarray `dyef` of apply_dye is typed by the call; translated as vec3, 2-d: "
            "assigned a vector of 3 at taichi_dye.py:14") in r.stderr
    same_source(program("taichi_dye").apply_dye, program("taichi_dye").apply_dye_typed)
    r = cli("emit", PROGRAMS / "taichi_dye.py", "--target", "cuda", "--kernel", "dye_brightness")
    assert r.returncode == 1
    assert ("taichi_dye.py:19:20: error: the element type of the untyped ndarray `dyef` is ambiguous: its elements "
            "are vectors (`.norm` of an element at taichi_dye.py:21) of a length nothing in the kernel gives") in r.stderr
    assert "hint: say which on the command line: --template dyef=vec2:2 or --template dyef=vec3:2 or " \
           "--template dyef=vec4:2" in r.stderr
    r = cli("emit", PROGRAMS / "taichi_dye.py", "--target", "cuda", "--kernel", "dye_brightness",
            "--template", "dyef=vec3:2")
    assert r.returncode == 0 and "note: ndarray `dyef`" not in r.stderr, r.stderr
    # a component (.y) says at least 2: the same error, from vec2 on
    r = cli("emit", PROGRAMS / "taichi_grid.py", "--target", "cuda", "--kernel", "normalize_grid")
    assert r.returncode == 1 and "its component `.y` taken at taichi_grid.py:19" in r.stderr
    assert "--template grid_v=vec2:2 or --template grid_v=vec3:2" in r.stderr


def test_a_copy_from_or_into_a_field_takes_its_element_type():
    r = cli("emit", PROGRAMS / "taichi_export.py", "--target", "cuda", "--kernel", "export_particles",
            "--kernel", "load_particles")
    assert r.returncode == 0, r.stderr
    assert ("taichi_export.py:12: note: ndarray `out_pos` of export_particles is typed by the call; translated as "
            "vec2, 1-d: copied from a vector field of 2 f32 at taichi_export.py:14") in r.stderr
    assert "`out_cell` of export_particles is typed by the call; translated as i32, 1-d: copied from a field of " \
           "i32 at taichi_export.py:15" in r.stderr
    assert "`src` of load_particles is typed by the call; translated as vec2, 1-d: copied into a vector field" \
        in r.stderr
    m = program("taichi_export")
    same_source(m.export_particles, m.export_particles_typed)
    same_source(m.load_particles, m.load_particles_typed)


def test_taichis_stable_fluid_emits_the_kernels_its_uses_type(tmp_path):
    """The corpus's stable_fluid.py unchanged: apply_impulse, subtract_gradient and
    enhance_vorticity (vector fields passed as qd.template()) were "`dc` is a f32 scalar"
    errors; divergence reads only `vc.x` of `sample(vf, i, j)`: a length nothing gives."""
    src = ROOT / "tests" / "corpus" / "stable_fluid.py"
    r = cli("emit", src, "--target", "cuda", "--kernel", "apply_impulse", "--kernel", "subtract_gradient",
            "--kernel", "enhance_vorticity")
    assert r.returncode == 0, r.stderr
    assert "`vf` of apply_impulse is typed by the call; translated as vec2, 2-d: assigned a vector of 2 at " \
           "stable_fluid.py:190" in r.stderr
    assert "`dyef` of apply_impulse is typed by the call; translated as vec3, 2-d" in r.stderr
    assert "`vf` of enhance_vorticity is typed by the call; translated as vec2, 2-d" in r.stderr
    r = cli("emit", src, "--target", "cuda", "--kernel", "divergence")
    assert r.returncode == 1 and "its component `.x` taken at stable_fluid.py:207" in r.stderr
    assert "--template vf=vec2:2" in r.stderr
    # with the flag the hint names, the whole file; `for I in ti.grouped(div_in)` reading I[1]: 2-d
    r = cli("emit", src, "--target", "all", "--template", "vf=vec2:2", "-o", tmp_path, "-q")
    assert r.returncode == 0, r.stderr
    assert "`div_in` of copy_divergence is typed by the call; translated as f32, 2-d" in r.stderr


def test_template_parameters_that_need_a_value_name_the_flag():
    """Genesis's static_rigid_sim_config and use_fast_path: was "needs a value" and a generic hint."""
    r = cli("emit", PROGRAMS / "genesis_static_config.py", "--target", "cuda")
    assert r.returncode == 1
    assert ("genesis_static_config.py:20:49: error: template parameter `static_rigid_sim_config` needs a value: it is "
            "an object with the attribute use_hibernation at genesis_static_config.py:13") in r.stderr
    assert "hint: pass it: --template static_rigid_sim_config=rigid_config\n" in r.stderr  # the object the file has
    assert ("genesis_static_config.py:26:83: error: template parameter `use_fast_path` needs a value: it is a flag at "
            "genesis_static_config.py:28") in r.stderr
    assert "hint: pass it: --template use_fast_path=True or --template use_fast_path=False" in r.stderr
    r = cli("emit", PROGRAMS / "genesis_static_config.py", "--target", "cuda", "--template",
            "static_rigid_sim_config=rigid_config", "--template", "use_fast_path=True")
    assert r.returncode == 0, r.stderr
    assert "0.99f" in r.stdout  # use_hibernation False: the damping branch
    # the corpus's Genesis capsule contacts: every flag the kernel needs, each naming the file's object
    src = ROOT / "tests" / "corpus" / "genesis_capsule_contact.py"
    r = cli("emit", src, "--target", "cuda")
    assert r.returncode == 1 and "hint: pass it: --template geoms_info=geoms_info; and for the kernel's other " \
                                 "template parameters: --template rigid_global_info=rigid_global_info\n" in r.stderr
    r = cli("emit", src, "--target", "cuda", "--template", "geoms_info=geoms_info", "--template",
            "rigid_global_info=rigid_global_info")
    assert r.returncode == 0, r.stderr


AMBIGUOUS = '''
import transpiler as qd


@qd.kernel
def mixed(idx: qd.types.ndarray(), x: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        x[idx[i]] = 1.0
        idx[i] = 0.5


@qd.kernel
def widths(v: qd.types.ndarray()):
    for i in range(v.shape[0]):
        v[i] = [1.0, 2.0]
        v[i] = qd.math.vec3(0.0)


@qd.kernel
def flags(mask: qd.types.ndarray(), x: qd.types.ndarray(qd.f32, 1)):
    for i in range(x.shape[0]):
        if mask[i] == 1:
            x[i] = 2.0 * x[i]


@qd.kernel
def widened(sel: qd.types.ndarray(), out: qd.types.ndarray(qd.i32, 1)):
    for i in range(out.shape[0]):
        out[i] = qd.bit_cast(sel[i], qd.i64)
'''


def test_ambiguous_uses_and_a_chosen_type_in_an_error(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(AMBIGUOUS)
    r = cli("emit", src, "--target", "cuda", "--kernel", "mixed")
    assert r.returncode == 1
    assert ("k.py:6:11: error: the element type of the untyped ndarray `idx` is ambiguous: it is used as an index at "
            "k.py:8 but assigned a float at k.py:9") in r.stderr
    assert "hint: say which on the command line: --template idx=i32:1 or --template idx=f32:1" in r.stderr
    r = cli("emit", src, "--target", "cuda", "--kernel", "widths")
    assert r.returncode == 1 and "its elements are vectors of 2 (assigned a list of 2 at k.py:15) and of 3 " \
                                 "(assigned a vector of 3 at k.py:16)" in r.stderr
    r = cli("emit", src, "--target", "cuda", "--kernel", "flags")
    assert r.returncode == 0, r.stderr
    assert "`mask` of flags is typed by the call; translated as i32, 1-d: compared for equality with the int 1 at " \
           "k.py:22" in r.stderr
    # nothing says: f32, and the error it leads to says where f32 came from
    r = cli("emit", src, "--target", "cuda", "--kernel", "widened")
    assert r.returncode == 1
    assert ("k.py:29:18: error: qd.bit_cast from f32 to i64: the widths differ (f32 is the element type chosen for "
            "the untyped ndarray `sel` at k.py:27: nothing in the kernel says which, and f32 is the default; give it "
            "with --template sel=DTYPE:1") in r.stderr
    r = cli("emit", src, "--target", "cuda", "--kernel", "widened", "--template", "sel=f32:1")
    assert r.returncode == 1 and "the widths differ\n" in r.stderr  # the user wrote f32: nothing to explain


def test_inference_is_deterministic_and_only_on_the_emit_path():
    m = program("genesis_envs")
    first = {n: (i.ann, i.reason) for n, i in untyped_params(m.set_dofs_velocity, {}, {}).items()}
    assert first == {n: (i.ann, i.reason) for n, i in untyped_params(m.set_dofs_velocity, {}, {}).items()}
    # a launch types from its arguments: an f32 envs_idx is still the error it was
    with pytest.raises(TranspileError, match="an index must be an integer, not f32"):
        qd.translate(m.reset_normals, "cuda", arg_types={"envs_idx": qd.types.ndarray(qd.f32, 1),
                                                         "normals": qd.types.ndarray(qd.f32, 2)})


def test_the_array_spec_of_the_command_line():
    assert parse_array_spec("i32:1").ndim == 1 and parse_array_spec("i32:1").dtype is qd.i32
    spec = parse_array_spec("vec3:2")
    assert spec.ndim == 2 and spec.dtype.shape == (3,) and spec.dtype.dtype is qd.f32
    assert parse_array_spec("ivec2").dtype.dtype is qd.i32 and parse_array_spec("ivec2").ndim is None
    assert parse_array_spec("mat3:1").dtype.shape == (3, 3)
    assert parse_array_spec("vec5:1") is None and parse_array_spec("f32:one") is None


# ----------------------------------------------------------------------------- toolchains and runs

CHECKS = [
    ("genesis_envs.py", ()),
    ("taichi_grid.py", ("--template", "grid_v=vec2:2")),
    ("taichi_dye.py", ("--template", "dyef=vec3:2")),
    ("taichi_export.py", ()),
    ("genesis_static_config.py", ("--template", "static_rigid_sim_config=rigid_config",
                                  "--template", "use_fast_path=False")),
]


@pytest.mark.toolchain
@pytest.mark.slow
@pytest.mark.parametrize("name,flags", CHECKS, ids=[c[0] for c in CHECKS])
def test_every_program_passes_every_toolchain(name, flags):
    r = cli("check", PROGRAMS / name, "--target", "all", *flags)
    assert r.returncode in (0, 3), r.stdout + r.stderr  # 3: a toolchain this machine lacks (said per target)
    assert "REJECTED" not in r.stdout and "ok" in r.stdout


def _both(untyped, typed, *args):
    inferred, _ = inferred_kernel(untyped)
    copies = [[a.copy() if isinstance(a, np.ndarray) else a for a in args] for _ in range(2)]
    inferred(*copies[0])
    typed(*copies[1])
    return copies


def test_inferred_kernels_compute_what_the_annotated_ones_do(executor, rng):
    m = program("genesis_envs")
    velocity = rng.standard_normal((m.N_ENVS, m.N_DOFS)).astype(np.float32)
    dofs_idx = rng.permutation(m.N_DOFS)[:4].astype(np.int32)
    envs_idx = rng.permutation(m.N_ENVS)[:7].astype(np.int32)
    start = rng.standard_normal((m.N_DOFS, m.N_ENVS)).astype(np.float32)
    want = start.copy()
    want[np.ix_(dofs_idx, envs_idx)] = velocity[:7, :4].T  # velocity[i_b_, i_d_] -> [dofs_idx[i_d_], envs_idx[i_b_]]
    got = []
    for kernel in (inferred_kernel(m.set_dofs_velocity)[0], m.set_dofs_velocity_typed):
        m.dofs_vel.from_numpy(start)
        kernel(velocity, dofs_idx, envs_idx)
        got.append(m.dofs_vel.to_numpy())
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[0], want)

    normals = rng.standard_normal((5, m.N_ENVS)).astype(np.float32)
    (a, _), (b, _) = _both(m.reset_normals, m.reset_normals_typed, normals, envs_idx)
    want = normals.copy()
    want[:, envs_idx] = 0
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, want)

    g = program("taichi_grid")
    grid_v = rng.standard_normal((6, 5, 2)).astype(np.float32)
    grid_m = rng.standard_normal((6, 5)).astype(np.float32)
    (va, ma), (vb, mb) = _both(g.seed_grid, g.seed_grid_typed, grid_v, grid_m)
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_allclose(va, np.stack([grid_m * 0.5, grid_m - 1.0], axis=-1), rtol=1e-6)
    (va, ma), (vb, mb) = _both(g.reset_grid, g.reset_grid_typed, grid_v, grid_m)
    np.testing.assert_array_equal(va, vb)
    assert not va.any() and not ma.any() and grid_v.all()

    e = program("taichi_export")
    src = rng.standard_normal((e.N, 2)).astype(np.float32)
    cells = rng.integers(-1000, 1000, e.N).astype(np.int32)
    e.cell.from_numpy(cells)
    for load, export in ((inferred_kernel(e.load_particles)[0], inferred_kernel(e.export_particles)[0]),
                         (e.load_particles_typed, e.export_particles_typed)):
        e.pos.from_numpy(np.zeros((e.N, 2), np.float32))
        load(src)
        out_pos, out_cell = np.zeros((e.N, 2), np.float32), np.zeros(e.N, np.int32)
        export(out_pos, out_cell)
        np.testing.assert_array_equal(out_pos, src)
        np.testing.assert_array_equal(out_cell, cells)

    d = program("taichi_dye")
    dyef = rng.random((8, 6, 3)).astype(np.float32)
    imp = (rng.random(5) * np.array([8, 6, 1, 1, 1])).astype(np.float32)
    (da, _, _), (db, _, _) = _both(d.apply_dye, d.apply_dye_typed, dyef, imp, 2.0)
    i, j = np.meshgrid(np.arange(8), np.arange(6), indexing="ij")
    factor = np.exp(-((i + 0.5 - imp[0]) ** 2 + (j + 0.5 - imp[1]) ** 2) / 16.0)
    norm = np.linalg.norm(dyef, axis=-1)
    want = dyef + (factor * 2.0 / (1 + norm))[..., None] * imp[2:5]
    np.testing.assert_allclose(da, db, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(da, want, rtol=1e-5, atol=1e-6)
