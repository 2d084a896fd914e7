# The system libraries libwick.a needs that ship no CMake package of their own, as imported targets:
# included by CMakeLists.txt when wick builds, and installed beside wickConfig.cmake, which includes
# it when a project finds an installed wick, so the search runs again on the consumer's machine and
# no path of the build machine is exported. Each function defines its target, or sets
# WICK_MISSING_DEPENDENCY in the caller to a message saying what is missing.

# wick::openblas: OpenBLAS, for f32/f64 GEMM on the CPU (Debian: libopenblas-dev), with cblas.h.
function(wick_find_openblas)
  if(TARGET wick::openblas)
    return()
  endif()
  find_path(CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas)
  find_library(OPENBLAS_LIBRARY NAMES openblas)
  if(NOT CBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
    set(WICK_MISSING_DEPENDENCY "wick needs OpenBLAS (Debian: libopenblas-dev)" PARENT_SCOPE)
    return()
  endif()
  add_library(wick::openblas UNKNOWN IMPORTED)
  set_target_properties(wick::openblas PROPERTIES IMPORTED_LOCATION ${OPENBLAS_LIBRARY}
                                                  INTERFACE_INCLUDE_DIRECTORIES ${CBLAS_INCLUDE_DIR})
endfunction()

# wick::pcre2: PCRE2 (8-bit, with Unicode), which runs the BPE pre-tokenizers' split regexes
# (Debian: libpcre2-dev), found through pkg-config.
function(wick_find_pcre2)
  if(TARGET wick::pcre2)
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(WICK_PCRE2 QUIET libpcre2-8)
  endif()
  if(NOT WICK_PCRE2_FOUND)
    set(WICK_MISSING_DEPENDENCY
        "wick needs PCRE2 (libpcre2-8, found through pkg-config) for the tokenizer's pre-tokenizer regexes (Debian: libpcre2-dev pkg-config)"
        PARENT_SCOPE)
    return()
  endif()
  find_library(WICK_PCRE2_LIBRARY NAMES pcre2-8 HINTS ${WICK_PCRE2_LIBRARY_DIRS})
  add_library(wick::pcre2 UNKNOWN IMPORTED)
  set_target_properties(wick::pcre2 PROPERTIES IMPORTED_LOCATION ${WICK_PCRE2_LIBRARY}
                                               INTERFACE_INCLUDE_DIRECTORIES "${WICK_PCRE2_INCLUDE_DIRS}")
endfunction()

# wick::shaderc: shaderc for the Vulkan backend, linked statically so that a binary needs no shader
# compiler at run time. Debian splits glslang and SPIRV-Tools out of libshaderc_combined.a, so those
# archives are linked explicitly, in this order; each is found as WICK_LIB_<name>.
set(WICK_SHADERC_ARCHIVES shaderc_combined glslang SPIRV MachineIndependent OSDependent GenericCodeGen
                          OGLCompiler glslang-default-resource-limits SPIRV-Tools-opt SPIRV-Tools)
function(wick_find_shaderc)
  if(TARGET wick::shaderc)
    return()
  endif()
  set(paths "")
  foreach(lib IN LISTS WICK_SHADERC_ARCHIVES)
    find_library(WICK_LIB_${lib} NAMES lib${lib}.a)
    if(NOT WICK_LIB_${lib})
      set(WICK_MISSING_DEPENDENCY
          "wick's Vulkan backend needs lib${lib}.a (Debian: libshaderc-dev glslang-dev spirv-tools)"
          PARENT_SCOPE)
      return()
    endif()
    list(APPEND paths ${WICK_LIB_${lib}})
  endforeach()
  add_library(wick::shaderc INTERFACE IMPORTED)
  set_target_properties(wick::shaderc PROPERTIES INTERFACE_LINK_LIBRARIES "${paths}")
endfunction()
