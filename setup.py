"""Which packages the wheel holds. Everything under transpiler/ is found (namespace packages
too: frontend/, ir/ and passes/ have no __init__.py); templates/ and cmake/ live beside the
package in a checkout and install as transpiler.templates and transpiler.cmake, which
pyproject's packages.find cannot express (it names packages only by where they sit)."""
from setuptools import find_namespace_packages, setup

setup(packages=[*find_namespace_packages(include=["transpiler", "transpiler.*"],
                                         exclude=["*.__pycache__", "transpiler.toolchains.metal_shim"]),
                "transpiler.templates", "transpiler.cmake"])
