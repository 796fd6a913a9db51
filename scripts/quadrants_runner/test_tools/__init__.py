"""Stands in for Quadrants' ``quadrants._test_tools`` (helpers of its test files, not of its
language): the same names, written here; the conftest maps ``quadrants._test_tools`` to it."""
from __future__ import annotations

import quadrants as qd


def qd_init_same_arch(**options) -> None:
    """qd.init again with the arch the test runs as (the conftest maps it to the executor)."""
    qd.init(arch=qd.lang.impl.current_cfg().arch, **options)
