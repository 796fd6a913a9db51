"""Stands in for Quadrants' ``quadrants._test_tools`` (helpers of its test files, not of its
language): the same names, written here; the conftest maps ``quadrants._test_tools`` to it."""
from __future__ import annotations

import os

import quadrants as qd


def qd_init_same_arch(**options) -> None:
    """qd.init again on the executor the test runs on, keeping the arch it plays."""
    from tests.python.conftest import INIT  # noqa: PLC0415

    arch = qd.lang.impl.current_cfg().arch
    qd.init(**INIT[os.environ.get("QDT_EXECUTOR", "cpu-cuda")], **options)
    qd.lang.impl.current_cfg().__dict__["arch"] = arch
