"""``qd.math``'s 4x4 homogeneous transforms (as Quadrants lays them out): a rotation about an
axis, by yaw / pitch / roll or by Euler angles, a scale and a translation. Written in the
kernel language and inlined like any ``@qd.func``."""
from __future__ import annotations

from . import ops
from .kernel import func
from .vector_types import mat4
from .mathlib import normalize


@func
def rot_by_axis(axis, ang):
    """Rotation by ``ang`` radians about ``axis`` (normalized here), Rodrigues' formula; the
    rows hold the rotated basis vectors, as Quadrants has it."""
    c = ops.cos(ang)
    s = ops.sin(ang)
    u = normalize(axis)
    k = (1 - c) * u
    return mat4([[c + k[0] * u[0], k[0] * u[1] + s * u[2], k[0] * u[2] - s * u[1], 0.0],
                 [k[1] * u[0] - s * u[2], c + k[1] * u[1], k[1] * u[2] + s * u[0], 0.0],
                 [k[2] * u[0] + s * u[1], k[2] * u[1] - s * u[0], c + k[2] * u[2], 0.0],
                 [0.0, 0.0, 0.0, 1.0]])


@func
def rot_yaw_pitch_roll(yaw, pitch, roll):
    cy, sy = ops.cos(yaw), ops.sin(yaw)
    cp, sp = ops.cos(pitch), ops.sin(pitch)
    cr, sr = ops.cos(roll), ops.sin(roll)
    return mat4([[cy * cr + sy * sp * sr, sr * cp, -sy * cr + cy * sp * sr, 0.0],
                 [-cy * sr + sy * sp * cr, cr * cp, sr * sy + cy * sp * cr, 0.0],
                 [sy * cp, -sp, cy * cp, 0.0],
                 [0.0, 0.0, 0.0, 1.0]])


@func
def rotation3d(ang_x, ang_y, ang_z):
    return rot_yaw_pitch_roll(ang_z, ang_x, ang_y)


@func
def scale(sx, sy, sz):
    return mat4([[sx, 0.0, 0.0, 0.0], [0.0, sy, 0.0, 0.0], [0.0, 0.0, sz, 0.0], [0.0, 0.0, 0.0, 1.0]])


@func
def translate(dx, dy, dz):
    return mat4([[1.0, 0.0, 0.0, dx], [0.0, 1.0, 0.0, dy], [0.0, 0.0, 1.0, dz], [0.0, 0.0, 0.0, 1.0]])
