"""The package's version, in a module of its own so that the lowest layers can read it (the
caches' ``version`` cleaning policy, transpiler/cache.py) as well as the package."""

__version__ = "0.1.0"
