# Embeds every file under kernels/<api>/ into the wick library as a table of strings, so the binary
# needs no source tree at run time. Included by the backend that uses the sources:
#   wick_embed_kernels(<target> <api> <function>)
# defines `std::span<const wick::gpu::EmbeddedFile> wick::gpu::<function>()` (see
# src/gpu/kernel_cache.h) in a generated source added to <target>. Names are paths relative to
# kernels/<api>/, which is also how kernels #include each other.
set(WICK_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_kernels_run.cmake)

function(wick_embed_kernels target api function)
  set(dir ${PROJECT_SOURCE_DIR}/kernels/${api})
  file(GLOB_RECURSE files CONFIGURE_DEPENDS ${dir}/*)
  set(out ${CMAKE_BINARY_DIR}/generated/kernels_${api}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUT=${out} -DFUNCTION=${function}
            -P ${WICK_EMBED_SCRIPT}
    DEPENDS ${files} ${WICK_EMBED_SCRIPT}
    COMMENT "Embedding kernels/${api}"
    VERBATIM)
  # The rule lives in the calling directory; a custom target carries it to <target> elsewhere.
  add_custom_target(wick_kernels_${api} DEPENDS ${out})
  add_dependencies(${target} wick_kernels_${api})
  set_source_files_properties(${out} TARGET_DIRECTORY ${target} PROPERTIES GENERATED TRUE)
  target_sources(${target} PRIVATE ${out})
endfunction()
