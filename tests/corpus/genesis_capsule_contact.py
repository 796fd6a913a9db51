"""Genesis's analytical capsule contacts (rigid collider): capsule-capsule and sphere-capsule,
with the helpers they call (closest points of two segments, a quaternion rotation, cross
products), on data-oriented structs of fields passed as ``qd.template()``, as Genesis runs them.

Source: Genesis-Embodied-AI/Genesis, commit 7bf5f6a7bf2946efc3a1e93667700011456078b5, Apache-2.0 (Copyright
Genesis Authors): genesis/engine/solvers/rigid/collider/capsule_contact.py (both functions, whole),
genesis/engine/solvers/rigid/collider/utils.py (func_closest_points_on_segments) and
genesis/utils/geom.py (qd_i_cross_vec, qd_j_cross_vec, qd_k_cross_vec, qd_transform_by_quat_fast).
Changed: the imports (``qd`` from the corpus runner; ``gs``, ``gu``, ``utils`` and ``array_class``
are namespaces in this file holding what the functions use of Genesis's modules: ``gs.qd_float``,
``gs.GEOM_TYPE`` as in genesis/constants.py, Genesis's field-mode ``GeomsInfo`` and
``RigidGlobalInfo`` = ``qd.template()``). Ours, not Genesis's: the two data-oriented structs (only
the members the functions read, laid out as Genesis's field mode lays them), the kernel that calls
the functions for 4096 random pairs, and the dump of its results.
"""
# ruff: noqa
# Tolerance: one pass of closed-form geometry per pair (no accumulation), but near-parallel
# segments divide by a small denominator: normals differ by 3.5e-5 from Quadrants' (measured);
# 3e-4 of each result's largest value (the contact flags are integers: they match exactly).
CORPUS_RTOL = 3e-4
import types
from enum import IntEnum

import numpy as np

import _corpus
from _corpus import qd

_corpus.init()


class GEOM_TYPE(IntEnum):
    # Beware PLANE must be the first geometry type as this is assumed by MPR collision detection.
    PLANE = 0
    SPHERE = 1
    ELLIPSOID = 2
    CYLINDER = 3
    CAPSULE = 4
    BOX = 5
    MESH = 6
    TERRAIN = 7


gs = types.SimpleNamespace(qd_float=qd.f32, GEOM_TYPE=GEOM_TYPE)
array_class = types.SimpleNamespace(GeomsInfo=qd.template(), RigidGlobalInfo=qd.template())


# ---------------------------------------------------------------- genesis/utils/geom.py
@qd.func
def qd_i_cross_vec(vec):
    return qd.Vector([0.0, -vec[2], vec[1]], dt=gs.qd_float)


@qd.func
def qd_j_cross_vec(vec):
    return qd.Vector([vec[2], 0.0, -vec[0]], dt=gs.qd_float)


@qd.func
def qd_k_cross_vec(vec):
    return qd.Vector([-vec[1], vec[0], 0.0], dt=gs.qd_float)


@qd.func
def qd_transform_by_quat_fast(v, quat):
    """
    Assumptions:
    - quat must be normalized
    """
    q_w, q_x, q_y, q_z = quat
    u = qd.Vector([q_x, q_y, q_z])
    t = 2.0 * u.cross(v)
    return v + q_w * t + u.cross(t)



gu = types.SimpleNamespace(qd_i_cross_vec=qd_i_cross_vec, qd_j_cross_vec=qd_j_cross_vec,
                           qd_k_cross_vec=qd_k_cross_vec, qd_transform_by_quat_fast=qd_transform_by_quat_fast)


# ---------------------------------------------------------------- genesis/engine/solvers/rigid/collider/utils.py
@qd.func
def func_closest_points_on_segments(
    seg_a_p1,
    seg_a_p2,
    seg_b_p1,
    seg_b_p2,
    EPS,
):
    """
    Compute closest points on two line segments using analytical solution.

    References
    ----------
    Real-Time Collision Detection by Christer Ericson, Chapter 5.1.9
    """
    segment_a_dir = seg_a_p2 - seg_a_p1
    segment_b_dir = seg_b_p2 - seg_b_p1
    vec_between_segment_origins = seg_a_p1 - seg_b_p1

    a_squared_len = segment_a_dir.dot(segment_a_dir)
    dot_product_dir = segment_a_dir.dot(segment_b_dir)
    b_squared_len = segment_b_dir.dot(segment_b_dir)
    d = segment_a_dir.dot(vec_between_segment_origins)
    e = segment_b_dir.dot(vec_between_segment_origins)

    denom = a_squared_len * b_squared_len - dot_product_dir * dot_product_dir

    s = gs.qd_float(0.0)
    t = gs.qd_float(0.0)

    if denom < EPS:
        # Segments are parallel or one/both are degenerate
        s = 0.0
        if b_squared_len > EPS:
            t = qd.math.clamp(e / b_squared_len, 0.0, 1.0)
        else:
            t = 0.0
    else:
        # General case: solve for optimal parameters
        s = (dot_product_dir * e - b_squared_len * d) / denom
        t = (a_squared_len * e - dot_product_dir * d) / denom

        s = qd.math.clamp(s, 0.0, 1.0)

        # Recompute t for clamped s
        t = qd.math.clamp((dot_product_dir * s + e) / b_squared_len if b_squared_len > EPS else 0.0, 0.0, 1.0)

        # Recompute s for clamped t (ensures we're on segment boundaries)
        s_new = qd.math.clamp((dot_product_dir * t - d) / a_squared_len if a_squared_len > EPS else 0.0, 0.0, 1.0)

        # Use refined s if it improves the solution
        if a_squared_len > EPS:
            s = s_new

    seg_a_closest = seg_a_p1 + s * segment_a_dir
    seg_b_closest = seg_b_p1 + t * segment_b_dir

    return seg_a_closest, seg_b_closest


utils = types.SimpleNamespace(func_closest_points_on_segments=func_closest_points_on_segments)


# ---------------------------------------------------------------- genesis/engine/solvers/rigid/collider/capsule_contact.py
@qd.func
def func_capsule_capsule_contact(
    i_ga,
    i_gb,
    ga_pos,
    ga_quat,
    gb_pos,
    gb_quat,
    geoms_info: array_class.GeomsInfo,
    rigid_global_info: array_class.RigidGlobalInfo,
):
    """
    Analytical capsule-capsule collision detection.

    A capsule is defined as a line segment plus a radius (swept sphere).
    Collision between two capsules reduces to:
      1. Find closest points on the two line segments (analytical)
      2. Check if distance < sum of radii
      3. Compute contact point and normal

    Parameters
    ----------
    ga_pos, ga_quat : Position and orientation of capsule A (may be perturbed for multi-contact).
    gb_pos, gb_quat : Position and orientation of capsule B (may be perturbed for multi-contact).
    """
    EPS = rigid_global_info.EPS[None]

    # Get capsule A parameters
    pos_a = ga_pos
    quat_a = ga_quat
    radius_a = geoms_info.data[i_ga][0]
    halflength_a = 0.5 * geoms_info.data[i_ga][1]

    # Get capsule B parameters
    pos_b = gb_pos
    quat_b = gb_quat
    radius_b = geoms_info.data[i_gb][0]
    halflength_b = 0.5 * geoms_info.data[i_gb][1]

    # Capsules are aligned along local Z-axis by convention
    local_z_unit = qd.Vector([0.0, 0.0, 1.0], dt=gs.qd_float)

    # Get segment axes in world space
    axis_a_unit = gu.qd_transform_by_quat_fast(local_z_unit, quat_a)
    axis_b_unit = gu.qd_transform_by_quat_fast(local_z_unit, quat_b)

    # Compute segment endpoints in world space
    P1 = pos_a - halflength_a * axis_a_unit
    P2 = pos_a + halflength_a * axis_a_unit
    Q1 = pos_b - halflength_b * axis_b_unit
    Q2 = pos_b + halflength_b * axis_b_unit

    Pa, Pb = utils.func_closest_points_on_segments(P1, P2, Q1, Q2, EPS)

    # from B to A
    diff = Pa - Pb
    dist_sq = diff.dot(diff)
    combined_radius = radius_a + radius_b
    combined_radius_sq = combined_radius * combined_radius

    is_col = False
    normal_unit = qd.Vector([1.0, 0.0, 0.0], dt=gs.qd_float)
    contact_pos = qd.Vector.zero(gs.qd_float, 3)
    penetration = gs.qd_float(0.0)
    if dist_sq < combined_radius_sq:
        is_col = True
        dist = qd.sqrt(dist_sq)

        # Compute contact normal (from B to A, pointing into geom A)
        if dist > EPS:
            normal_unit = diff / dist
        else:
            # Segments are coincident, use arbitrary perpendicular direction
            # Try cross product with axis_a first
            normal_dir = axis_a_unit.cross(axis_b_unit)
            normal_dir_len = normal_dir.dot(normal_dir)
            if normal_dir_len > EPS:
                normal_unit = normal_dir / normal_dir_len
            else:
                # Axes are parallel, use any perpendicular
                if qd.abs(axis_a_unit[0]) < 0.9:
                    normal_unit = gu.qd_i_cross_vec(axis_a_unit)
                else:
                    normal_unit = gu.qd_j_cross_vec(axis_a_unit)

        penetration = combined_radius - dist
        # Contact position at midpoint between surfaces
        contact_pos = Pa - radius_a * normal_unit + gs.qd_float(0.5) * penetration * normal_unit

    return is_col, normal_unit, contact_pos, penetration


@qd.func
def func_sphere_capsule_contact(
    i_ga,
    i_gb,
    ga_pos,
    ga_quat,
    gb_pos,
    gb_quat,
    geoms_info: array_class.GeomsInfo,
    rigid_global_info: array_class.RigidGlobalInfo,
):
    """
    Analytical sphere-capsule collision detection.

    A sphere-capsule collision reduces to:
      1. Find closest point on the capsule's line segment to sphere center
      2. Check if distance < sum of radii
      3. Compute contact point and normal

    Parameters
    ----------
    ga_pos, ga_quat : Position and orientation of geom A (may be perturbed for multi-contact).
    gb_pos, gb_quat : Position and orientation of geom B (may be perturbed for multi-contact).
    """
    EPS = rigid_global_info.EPS[None]

    # Ensure sphere is always i_ga and capsule is i_gb
    normal_dir = 1
    sphere_center = ga_pos
    capsule_center = gb_pos
    capsule_q = gb_quat
    if geoms_info.type[i_gb] == gs.GEOM_TYPE.SPHERE:
        i_ga, i_gb = i_gb, i_ga
        sphere_center = gb_pos
        capsule_center = ga_pos
        capsule_q = ga_quat
        normal_dir = -1

    sphere_radius = geoms_info.data[i_ga][0]

    capsule_quat = capsule_q
    capsule_radius = geoms_info.data[i_gb][0]
    capsule_halflength = 0.5 * geoms_info.data[i_gb][1]

    # Capsule is aligned along local Z-axis
    local_z_unit = qd.Vector([0.0, 0.0, 1.0], dt=gs.qd_float)
    capsule_axis = gu.qd_transform_by_quat_fast(local_z_unit, capsule_quat)

    # Compute capsule segment endpoints
    P1 = capsule_center - capsule_halflength * capsule_axis
    P2 = capsule_center + capsule_halflength * capsule_axis

    # Find closest point on capsule segment to sphere center
    # Using parametric form: P(t) = P1 + t*(P2-P1), t ∈ [0,1]
    segment_vec = P2 - P1
    segment_length_sq = segment_vec.dot(segment_vec)

    # Project sphere center onto segment
    # Default for degenerate case
    t = gs.qd_float(0.5)
    if segment_length_sq > EPS:
        t = (sphere_center - P1).dot(segment_vec) / segment_length_sq
        t = qd.math.clamp(t, 0.0, 1.0)

    closest_point = P1 + t * segment_vec

    # Compute distance from sphere center to closest point
    diff = sphere_center - closest_point
    dist_sq = diff.dot(diff)
    combined_radius = sphere_radius + capsule_radius
    combined_radius_sq = combined_radius * combined_radius

    is_col = False
    normal_unit = qd.Vector([1.0, 0.0, 0.0], dt=gs.qd_float)
    contact_pos = qd.Vector.zero(gs.qd_float, 3)
    penetration = gs.qd_float(0.0)
    if dist_sq < combined_radius_sq:
        is_col = True
        dist = qd.sqrt(dist_sq)

        # Compute contact normal (from capsule to sphere, i.e., B to A)
        if dist > EPS:
            normal_unit = diff / dist
        else:
            # Sphere center is exactly on capsule axis
            # Use any perpendicular direction to the capsule axis
            if qd.abs(capsule_axis[0]) < 0.9:
                normal_unit = gu.qd_i_cross_vec(capsule_axis)
            else:
                normal_unit = gu.qd_j_cross_vec(capsule_axis)

        penetration = combined_radius - dist
        # Contact position at midpoint between surfaces
        contact_pos = sphere_center - (sphere_radius - 0.5 * penetration) * normal_unit

    return is_col, normal_unit * normal_dir, contact_pos, penetration


# ---------------------------------------------------------------- ours: the structs, a kernel, the run
N_PAIRS = 4096


@qd.data_oriented
class StructGeomsInfo:
    def __init__(self, n):
        self.data = qd.Vector.field(7, dtype=gs.qd_float, shape=n)  # [0] radius, [1] length (capsules)
        self.type = qd.field(dtype=qd.i32, shape=n)


@qd.data_oriented
class StructRigidGlobalInfo:
    def __init__(self):
        self.EPS = qd.field(dtype=gs.qd_float, shape=())


geoms_info = StructGeomsInfo(2 * N_PAIRS)
rigid_global_info = StructRigidGlobalInfo()
pos = qd.Vector.field(3, dtype=gs.qd_float, shape=2 * N_PAIRS)
quat = qd.Vector.field(4, dtype=gs.qd_float, shape=2 * N_PAIRS)
is_col = qd.field(qd.i32, shape=N_PAIRS)
normal = qd.Vector.field(3, dtype=gs.qd_float, shape=N_PAIRS)
contact_pos = qd.Vector.field(3, dtype=gs.qd_float, shape=N_PAIRS)
penetration = qd.field(gs.qd_float, shape=N_PAIRS)


@qd.kernel
def detect(geoms_info: array_class.GeomsInfo, rigid_global_info: array_class.RigidGlobalInfo):
    for i in range(N_PAIRS):
        i_ga, i_gb = 2 * i, 2 * i + 1
        c, n, p, d = False, qd.Vector.zero(gs.qd_float, 3), qd.Vector.zero(gs.qd_float, 3), gs.qd_float(0.0)
        if geoms_info.type[i_ga] == gs.GEOM_TYPE.CAPSULE and geoms_info.type[i_gb] == gs.GEOM_TYPE.CAPSULE:
            c, n, p, d = func_capsule_capsule_contact(
                i_ga, i_gb, pos[i_ga], quat[i_ga], pos[i_gb], quat[i_gb], geoms_info, rigid_global_info
            )
        else:
            c, n, p, d = func_sphere_capsule_contact(
                i_ga, i_gb, pos[i_ga], quat[i_ga], pos[i_gb], quat[i_gb], geoms_info, rigid_global_info
            )
        is_col[i] = c
        normal[i] = n
        contact_pos[i] = p
        penetration[i] = d


def main():
    g = _corpus.rng()
    n = 2 * N_PAIRS
    # a third of the pairs sphere-capsule (the sphere first or second), the rest capsule-capsule
    kinds = np.full(n, int(GEOM_TYPE.CAPSULE), np.int32)
    sphere = g.random(N_PAIRS) < 0.33
    side = g.integers(0, 2, N_PAIRS)
    kinds[2 * np.flatnonzero(sphere) + side[sphere]] = int(GEOM_TYPE.SPHERE)
    data = np.zeros((n, 7), np.float32)
    data[:, 0] = g.uniform(0.05, 0.3, n)
    data[:, 1] = np.where(kinds == int(GEOM_TYPE.CAPSULE), g.uniform(0.1, 1.0, n), 0.0)
    q = g.standard_normal((n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    p = g.uniform(-0.5, 0.5, (n, 3))
    p[1::2] = p[0::2] + g.uniform(-0.6, 0.6, (N_PAIRS, 3))  # B near A: about half the pairs touch
    geoms_info.type.from_numpy(kinds)
    geoms_info.data.from_numpy(data)
    rigid_global_info.EPS[None] = 1e-6
    pos.from_numpy(p.astype(np.float32))
    quat.from_numpy(q.astype(np.float32))
    detect(geoms_info, rigid_global_info)
    _corpus.dump(is_col=is_col, normal=normal, contact_pos=contact_pos, penetration=penetration)


if __name__ == "__main__":
    main()
