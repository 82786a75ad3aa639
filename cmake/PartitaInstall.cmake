# Install rules and the CMake package (included by the top-level CMakeLists after the layers).
# Each rule names its install component, which is its Debian package (cmake/PartitaDebian.cmake):
# partita (the command line), dev (the rest: libpartita-dev); python/ adds its own.
#
#   bin/partita                          the command line
#   include/partita/<layer>/*.h          the public headers (below) and what they include
#   lib/libpartita_<layer>.a             every library a public target needs
#   lib/cmake/Partita/                   PartitaConfig.cmake (+ version, targets, FindCAF,
#                                        FindMETIS): find_package(Partita)
#
# Headers go under include/partita/, not include/: the layers' folder names (base/, graph/,
# runtime/, ...) would collide with other packages' headers in /usr/include. Sources and
# host applications include them the same way ("runtime/runtime.h").
include(CMakePackageConfigHelpers)

# The embedding API (docs/embedding.md), the registry of a host's own models, the TLS
# credentials a host proves itself to daemons with, and the partition format reader.
set(PARTITA_PUBLIC_HEADERS
  runtime/runtime.h
  runtime/daemon.h
  runtime/tls/credentials.h
  models/model_registry.h
  actors/protocol.h
  training/job_config.h
  training/job_driver.h
  training/job_actor_types.h
  training/job_types.h
  partitioner/partition_format.h)

# Bottom up; each exported as Partita::<layer>. Static: a host links what it uses into its
# own binary, and nothing has to be found at run time but the Debian libraries.
set(_partita_layers base graph partitioner datasets messages runtime actors embeddings models training)
foreach(_layer IN LISTS _partita_layers)
  set_target_properties(partita_${_layer} PROPERTIES EXPORT_NAME ${_layer})
  # The same names for a project that adds this tree with add_subdirectory.
  add_library(Partita::${_layer} ALIAS partita_${_layer})
  list(APPEND _partita_targets partita_${_layer})
endforeach()

install(TARGETS partita RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT partita)
# What `partita` runs for the commands that train (tools/light_commands.cpp finds it there).
install(TARGETS partita-full RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/partita COMPONENT partita)
install(TARGETS ${_partita_targets} EXPORT PartitaTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(CODE "
  set(PARTITA_SOURCE_DIR \"${PROJECT_SOURCE_DIR}\")
  set(PARTITA_PUBLIC_HEADERS \"${PARTITA_PUBLIC_HEADERS}\")
  set(PARTITA_HEADER_DESTINATION \"${PARTITA_INSTALL_INCLUDEDIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/InstallPublicHeaders.cmake\")" COMPONENT dev)

set(_partita_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Partita)
install(EXPORT PartitaTargets NAMESPACE Partita:: DESTINATION ${_partita_cmake_dir} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/PartitaConfig.cmake.in
  ${PROJECT_BINARY_DIR}/PartitaConfig.cmake INSTALL_DESTINATION ${_partita_cmake_dir})
# 0.x: a minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/PartitaConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/PartitaConfig.cmake
  ${PROJECT_BINARY_DIR}/PartitaConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindMETIS.cmake
  DESTINATION ${_partita_cmake_dir} COMPONENT dev)
