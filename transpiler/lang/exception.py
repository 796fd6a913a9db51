"""``qd.lang.exception``: Quadrants' exception classes, as its users catch them. Every kernel
error here is one located TranspileError, raised when the kernel is translated; run-time
ones are Python's."""
from ..errors import KernelAssertionError, TranspileError

QuadrantsCompilationError = QuadrantsSyntaxError = QuadrantsNameError = QuadrantsIndexError = TranspileError
QuadrantsTypeError = TranspileError
QuadrantsRuntimeError = RuntimeError
QuadrantsAssertionError = KernelAssertionError
QuadrantsRuntimeTypeError = TypeError
