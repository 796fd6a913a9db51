"""``qd.types``: parameter annotations."""
from .lang import _NdarrayFactory, template  # noqa: F401

ndarray = _NdarrayFactory()
NDArray = ndarray
