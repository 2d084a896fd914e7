# Embeds every file under kernels/<api>/ into the wick library as a table of strings, so the binary
# needs no source tree at run time. Included by the backend that uses the sources:
#   wick_embed_kernels(<target> <api> <function> [EXTRA <folder>...])
# defines `std::span<const wick::gpu::EmbeddedFile> wick::gpu::<function>()` (see
# src/gpu/kernel_cache.h) in a generated source added to <target>. Names are paths relative to
# kernels/<api>/, which is also how kernels #include each other; each EXTRA folder of kernels/
# (e.g. `shared`, the headers the host and every kernel language include) joins the table under
# its own name: kernels/shared/params.h is "shared/params.h".
# Paths come from this file's own place, so that they hold when wick is a parent project's subdirectory.
set(WICK_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_kernels_run.cmake)
get_filename_component(WICK_KERNELS_DIR ${CMAKE_CURRENT_LIST_DIR}/../kernels ABSOLUTE)

function(wick_embed_kernels target api function)
  cmake_parse_arguments(PARSE_ARGV 3 EMBED "" "" "EXTRA")
  set(root ${WICK_KERNELS_DIR})
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${root}/${api}/*)
  foreach(folder IN LISTS EMBED_EXTRA)
    file(GLOB_RECURSE extra_files CONFIGURE_DEPENDS ${root}/${folder}/*)
    list(APPEND files ${extra_files})
  endforeach()
  # A list cannot cross the command line of a custom command: the folders travel comma-separated.
  string(REPLACE ";" "," extra "${EMBED_EXTRA}")
  set(out ${PROJECT_BINARY_DIR}/generated/kernels_${api}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DROOT=${root} -DAPI=${api} -DEXTRA=${extra} -DOUT=${out}
            -DFUNCTION=${function} -P ${WICK_EMBED_SCRIPT}
    DEPENDS ${files} ${WICK_EMBED_SCRIPT}
    COMMENT "Embedding kernels/${api}"
    VERBATIM)
  # The rule lives in the calling directory; a custom target carries it to <target> elsewhere.
  add_custom_target(wick_kernels_${api} DEPENDS ${out})
  add_dependencies(${target} wick_kernels_${api})
  set_source_files_properties(${out} TARGET_DIRECTORY ${target} PROPERTIES GENERATED TRUE)
  target_sources(${target} PRIVATE ${out})
endfunction()
