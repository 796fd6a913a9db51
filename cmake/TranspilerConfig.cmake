# find_package(Transpiler) after `pip install transpiler`:
#   cmake -DTranspiler_DIR=$(transpiler cmake-dir) ...
# gives transpiler_add_kernels() (see Transpiler.cmake beside this file).
include("${CMAKE_CURRENT_LIST_DIR}/Transpiler.cmake")
set(Transpiler_FOUND TRUE)
