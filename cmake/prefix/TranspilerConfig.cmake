# find_package(Transpiler) with CMAKE_PREFIX_PATH naming the prefix pip installed into (a venv,
# /usr/local, a `pip install --prefix` or `--target` folder):
#   cmake -S myapp -B build -DCMAKE_PREFIX_PATH=/path/to/venv
# pip puts this file in <prefix>/share/cmake/Transpiler/ and the package in the prefix's
# site-packages; this loads the package's own config (transpiler/cmake/, which
# `transpiler cmake-dir` prints for -DTranspiler_DIR=).
get_filename_component(_transpiler_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
file(GLOB _transpiler_configs
     "${_transpiler_prefix}/lib/python3*/site-packages/transpiler/cmake/TranspilerConfig.cmake"
     "${_transpiler_prefix}/lib/python3*/dist-packages/transpiler/cmake/TranspilerConfig.cmake"
     "${_transpiler_prefix}/Lib/site-packages/transpiler/cmake/TranspilerConfig.cmake"
     "${_transpiler_prefix}/transpiler/cmake/TranspilerConfig.cmake")
if(NOT _transpiler_configs)
  # An editable install leaves no copy in site-packages: ask the prefix's interpreter.
  find_program(_transpiler_prefix_python NAMES python3 python PATHS "${_transpiler_prefix}/bin"
               "${_transpiler_prefix}/Scripts" NO_DEFAULT_PATH)
  if(_transpiler_prefix_python)
    execute_process(COMMAND "${_transpiler_prefix_python}" -m transpiler cmake-dir
                    OUTPUT_VARIABLE _transpiler_dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _transpiler_rc)
    if(_transpiler_rc EQUAL 0 AND EXISTS "${_transpiler_dir}/TranspilerConfig.cmake")
      set(_transpiler_configs "${_transpiler_dir}/TranspilerConfig.cmake")
    endif()
  endif()
endif()
if(NOT _transpiler_configs)
  set(Transpiler_FOUND FALSE)
  set(Transpiler_NOT_FOUND_MESSAGE "the transpiler package is not installed in ${_transpiler_prefix} "
      "(this file is from its share/cmake/Transpiler); pass -DTranspiler_DIR=$(transpiler cmake-dir)")
  return()
endif()
list(GET _transpiler_configs 0 _transpiler_config)
include("${_transpiler_config}")
