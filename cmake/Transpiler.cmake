# Generate GPU code from Python kernels at build time.
#
#   include(path/to/transpiler/cmake/Transpiler.cmake)       # from a checkout, or
#   find_package(Transpiler REQUIRED)                          # after `pip install`, with
#       -DTranspiler_DIR=$(transpiler cmake-dir)               # (TranspilerConfig.cmake)
#   transpiler_add_kernels(<name>
#       SOURCES kernels.py [more.py ...]
#       TARGETS glsl cuda hip msl           # any of them
#       [KERNELS name ...]                  # default: every @qd.kernel in the files
#       [OUTPUT_DIR dir]                    # default: ${CMAKE_CURRENT_BINARY_DIR}/<name>
#       [TEMPLATE param=value ...]          # values of qd.template() parameters
#       [OPTIONS --wave32 ...])             # more `emit` options
#
# For every target T it writes, into <OUTPUT_DIR>/T/, what `cli.py emit --header` writes
# (the sources, <kernel>.json and the C++ header <kernel>.T.h) and, for GLSL, one SPIR-V
# module per task (<task>.spv, compiled with glslangValidator). Editing a Python file, or
# the transpiler itself, regenerates them. <name> is an INTERFACE library: linking it adds
# the include directories and makes the generation run first. Sets in the caller's scope:
#   <name>_OUTPUT_DIR, <name>_<T>_DIR (upper-case T), <name>_SPIRV_FILES, <name>_FILES.
#
# Cache variables: TRANSPILER_PYTHON (default: the checkout's .venv interpreter if there is
# one, else python3), TRANSPILER_CLI (default: cli.py of the checkout this file is in, else
# the installed package this file came with), TRANSPILER_GLSLANG (glslangValidator).
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "cmake/Transpiler.cmake needs CMake 3.20 or newer")
endif()

# This file is cmake/ of a checkout (beside transpiler/ and templates/), or transpiler/cmake/
# of an installed package (beside its modules and templates/).
get_filename_component(_transpiler_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
if(EXISTS "${_transpiler_root}/transpiler/cli.py")
  set(_TRANSPILER_PACKAGE "${_transpiler_root}/transpiler" CACHE INTERNAL "the transpiler's modules")
else()
  set(_TRANSPILER_PACKAGE "${_transpiler_root}" CACHE INTERNAL "the transpiler's modules")
endif()
set(_TRANSPILER_TEMPLATES "${_transpiler_root}/templates" CACHE INTERNAL "the transpiler's templates")

if(NOT TRANSPILER_PYTHON)
  if(EXISTS "${_transpiler_root}/.venv/bin/python")
    set(_transpiler_python "${_transpiler_root}/.venv/bin/python")
  else()
    find_program(_transpiler_python NAMES python3 python REQUIRED)
  endif()
  set(TRANSPILER_PYTHON "${_transpiler_python}" CACHE FILEPATH "the Python that runs the transpiler")
endif()
if(EXISTS "${_transpiler_root}/transpiler/cli.py")
  set(TRANSPILER_CLI "${_transpiler_root}/cli.py" CACHE FILEPATH "the transpiler's cli.py")
else()
  # Installed with pip: run the package this file came with, wherever pip put it (a venv's
  # site-packages or a `pip install --target` folder), whatever else is on sys.path.
  set(TRANSPILER_CLI "${CMAKE_CURRENT_LIST_DIR}/run_transpiler.py" CACHE FILEPATH "the installed transpiler's launcher")
endif()

function(transpiler_add_kernels name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT_DIR" "SOURCES;TARGETS;KERNELS;TEMPLATE;OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "transpiler_add_kernels(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_SOURCES OR NOT ARG_TARGETS)
    message(FATAL_ERROR "transpiler_add_kernels(${name}): SOURCES and TARGETS are required")
  endif()
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR "${CMAKE_CURRENT_BINARY_DIR}/${name}")
  endif()
  get_filename_component(out_root "${ARG_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")

  set(emit_options)
  foreach(k IN LISTS ARG_KERNELS)
    list(APPEND emit_options --kernel "${k}")
  endforeach()
  foreach(t IN LISTS ARG_TEMPLATE)
    list(APPEND emit_options --template "${t}")
  endforeach()
  list(APPEND emit_options ${ARG_OPTIONS})

  # A change to the transpiler (or its templates) changes what it writes.
  file(GLOB_RECURSE tool_files CONFIGURE_DEPENDS "${_TRANSPILER_PACKAGE}/*.py" "${_TRANSPILER_TEMPLATES}/*.j2")

  if("glsl" IN_LIST ARG_TARGETS AND NOT TRANSPILER_GLSLANG)
    find_program(TRANSPILER_GLSLANG glslangValidator)
    if(NOT TRANSPILER_GLSLANG)
      message(FATAL_ERROR "transpiler_add_kernels(${name}): glslangValidator not found "
                          "(apt-get install glslang-tools, or set TRANSPILER_GLSLANG)")
    endif()
  endif()

  set(all_outputs)
  set(spirv_files)
  set(include_dirs)
  foreach(target IN LISTS ARG_TARGETS)
    if(NOT target MATCHES "^(cuda|hip|glsl|msl)$")
      message(FATAL_ERROR "transpiler_add_kernels(${name}): unknown target ${target}")
    endif()
    set(out_dir "${out_root}/${target}")
    list(APPEND include_dirs "${out_dir}")
    string(TOUPPER "${target}" upper)
    set(${name}_${upper}_DIR "${out_dir}" PARENT_SCOPE)

    foreach(src IN LISTS ARG_SOURCES)
      get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
      get_filename_component(stem "${src}" NAME_WE)
      set(command "${TRANSPILER_PYTHON}" ${TRANSPILER_CLI} emit "${src}" --target "${target}" --header -q
                  ${emit_options})
      # The file names depend on the kernels (GLSL: one file per task), so emit once now
      # into a scratch folder to learn them; editing the Python file re-runs this.
      set(probe "${CMAKE_CURRENT_BINARY_DIR}/.transpiler/${name}/${stem}/${target}")
      file(REMOVE_RECURSE "${probe}")
      execute_process(COMMAND ${command} -o "${probe}" RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "transpiler_add_kernels(${name}): ${src} failed for ${target} (exit ${rc}):\n${err}")
      endif()
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${src}")
      file(GLOB names RELATIVE "${probe}" "${probe}/*")
      list(SORT names)
      set(outputs)
      foreach(n IN LISTS names)
        list(APPEND outputs "${out_dir}/${n}")
      endforeach()
      add_custom_command(
        OUTPUT ${outputs}
        COMMAND ${command} -o "${out_dir}"
        DEPENDS "${src}" ${tool_files}
        COMMENT "transpiler: ${stem}.py -> ${target}"
        VERBATIM)
      list(APPEND all_outputs ${outputs})

      if(target STREQUAL "glsl")
        foreach(comp IN LISTS outputs)
          if(comp MATCHES "\\.comp$")
            string(REGEX REPLACE "\\.comp$" ".spv" spv "${comp}")
            get_filename_component(spv_name "${spv}" NAME)
            add_custom_command(
              OUTPUT "${spv}"
              COMMAND "${TRANSPILER_GLSLANG}" -V --target-env vulkan1.2 --quiet -o "${spv}" "${comp}"
              DEPENDS "${comp}"
              COMMENT "glslangValidator: ${spv_name}"
              VERBATIM)
            list(APPEND spirv_files "${spv}")
          endif()
        endforeach()
      endif()
    endforeach()
  endforeach()

  add_custom_target(${name}_generate DEPENDS ${all_outputs} ${spirv_files})
  add_library(${name} INTERFACE)
  target_include_directories(${name} INTERFACE ${include_dirs})
  add_dependencies(${name} ${name}_generate)

  set(${name}_OUTPUT_DIR "${out_root}" PARENT_SCOPE)
  set(${name}_SPIRV_FILES "${spirv_files}" PARENT_SCOPE)
  set(${name}_FILES "${all_outputs}" PARENT_SCOPE)
endfunction()
