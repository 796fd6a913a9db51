"""A vector's component letters, shared by the host-side matrix (NumPy, loaded only when a
value is built) and the kernel-side description, so that neither imports the other for them."""

SWIZZLE_SETS = ("xyzw", "rgba", "stpq")  # a vector's components, by position, in each spelling
