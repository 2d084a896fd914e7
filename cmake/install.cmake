# Install rules (WICK_INSTALL): libwick.a, the public headers, the CLI, a relocatable CMake package
# (find_package(wick) → wick::wick) and wick.pc for pkg-config. The kernels are embedded in the
# library and the kernel disk cache lives in the user's cache folder, so nothing else is needed at
# run time.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(WICK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/wick)
target_include_directories(wick PUBLIC $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS wick EXPORT wickTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/wick DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(WICK_BUILD_CLI)
  install(TARGETS wick_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# What the installed package has to find again: the backends compiled in.
get_target_property(WICK_PUBLIC_DEFINITIONS wick INTERFACE_COMPILE_DEFINITIONS)
set(WICK_WITH_VULKAN OFF)
set(WICK_WITH_CUDA OFF)
if("WICK_WITH_VULKAN" IN_LIST WICK_PUBLIC_DEFINITIONS)
  set(WICK_WITH_VULKAN ON)
endif()
if("WICK_WITH_CUDA" IN_LIST WICK_PUBLIC_DEFINITIONS)
  set(WICK_WITH_CUDA ON)
endif()

install(EXPORT wickTargets NAMESPACE wick:: DESTINATION ${WICK_CMAKE_DIR})
configure_package_config_file(cmake/wickConfig.cmake.in ${PROJECT_BINARY_DIR}/wickConfig.cmake
                              INSTALL_DESTINATION ${WICK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/wickConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/wickConfig.cmake ${PROJECT_BINARY_DIR}/wickConfigVersion.cmake
              cmake/wickDependencies.cmake
        DESTINATION ${WICK_CMAKE_DIR})

# wick.pc: libwick.a is static only, so its dependencies go in Libs (pkg-config --libs wick links).
# The system libraries are named by the paths this build found.
set(WICK_PC_CFLAGS "")
foreach(definition IN LISTS WICK_PUBLIC_DEFINITIONS)
  string(APPEND WICK_PC_CFLAGS " -D${definition}")
endforeach()
set(WICK_PC_LIBS "${OPENBLAS_LIBRARY} ${WICK_PCRE2_LIBRARY}")
if(WICK_WITH_VULKAN)
  string(APPEND WICK_PC_LIBS " ${Vulkan_LIBRARY}")
  foreach(lib IN LISTS WICK_SHADERC_ARCHIVES)
    string(APPEND WICK_PC_LIBS " ${WICK_LIB_${lib}}")
  endforeach()
endif()
string(APPEND WICK_PC_LIBS " -pthread")
if(WICK_WITH_CUDA)  # the driver, NVRTC and cuBLASLt are opened with dlopen: nothing CUDA is linked
  foreach(lib IN LISTS CMAKE_DL_LIBS)
    string(APPEND WICK_PC_LIBS " -l${lib}")
  endforeach()
endif()
# The prefix is found from wick.pc's own place, so the installed tree can move.
file(RELATIVE_PATH WICK_PC_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" WICK_PC_PREFIX "${WICK_PC_PREFIX}")
configure_file(cmake/wick.pc.in ${PROJECT_BINARY_DIR}/wick.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/wick.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
