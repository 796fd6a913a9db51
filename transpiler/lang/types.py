"""``qd.types``: parameter annotations."""
from .kernel import _NdarrayFactory, template  # noqa: F401

ndarray = _NdarrayFactory()
NDArray = ndarray
# qd.Tensor takes a field or an ndarray in Quadrants; here (no fields yet) an ndarray typed by the call.
Tensor = ndarray
