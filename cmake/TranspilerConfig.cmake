# find_package(Transpiler) after `pip install qd-transpiler`, with either
#   cmake -DTranspiler_DIR=$(transpiler cmake-dir) ...      (this folder), or
#   cmake -DCMAKE_PREFIX_PATH=/path/to/venv ...              (prefix/TranspilerConfig.cmake, installed
#                                                             in <prefix>/share/cmake/Transpiler, loads this)
# gives transpiler_add_kernels() (see Transpiler.cmake beside this file).
include("${CMAKE_CURRENT_LIST_DIR}/Transpiler.cmake")
set(Transpiler_FOUND TRUE)
