"""``qd.types``: parameter annotations."""
from .kernel import _NdarrayFactory, template  # noqa: F401

ndarray = _NdarrayFactory()
NDArray = ndarray
