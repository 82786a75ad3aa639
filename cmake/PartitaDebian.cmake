# The Debian packages: `cpack -G DEB` in the build folder (after the build) packs what
# `cmake --install` installs, under /usr, split by install component into
#
#   partita          component partita: /usr/bin/partita, /usr/libexec/partita/partita-full,
#                    partita(1), and the partita service: /lib/systemd/system/partita.service
#                    (`partita start --block` as the system user partita, which the postinst
#                    creates) with its conffile /etc/partita/partita.conf
#   libpartita-dev   component dev: the public headers, the static libraries and the CMake
#                    package (find_package(Partita)), for host applications (docs/embedding.md)
#   python3-partita  component python, when python/ builds the extension: `import partita`
#
# Depends: dpkg-shlibdeps names the run-time library of every shared library a package's
# binaries link (libssl3, libtorch1.13, libcaf-io0.17, ...); added by hand is what is loaded
# without being linked: OpenBLAS, which libtorch would otherwise find as the reference BLAS,
# 15-25x slower in training; PLplot's cairo driver, which `partita plot` loads; adduser, for
# the postinst. libpartita-dev links nothing: it depends on the -dev packages a host compiles
# against (PartitaConfig.cmake finds them again).
#
# Each package carries usr/share/doc/<package>/copyright (DEP-5, packaging/debian/copyright.in)
# and changelog.Debian.gz (packaging/debian/changelog.in, whose version must be this
# project's). The man page is made from `partita --help` by help2man when it is installed;
# tests/package/deb_test.sh builds the packages, checks them with lintian and runs the
# service's command line from the unpacked package.

set(PARTITA_DEB_MAINTAINER "Partita maintainers <maintainers@partita.invalid>" CACHE STRING
    "The Maintainer field of the Debian packages (Name <address>): whoever answers for the build")
set(PARTITA_DEB_COPYRIGHT "2026 The Partita authors" CACHE STRING
    "The Copyright field of the packages' copyright file (years and holders)")
set(PARTITA_DEB_LICENSE "other" CACHE STRING
    "The packages' licence: a DEP-5 short name (e.g. Apache-2.0), its text from PARTITA_DEB_LICENSE_FILE")
set(PARTITA_DEB_LICENSE_FILE "" CACHE FILEPATH
    "The licence's full text for the packages' copyright file (empty: a statement that none is granted)")
if(PARTITA_DEB_MAINTAINER MATCHES "@localhost|@[^.>]*>")
  message(FATAL_ERROR "PARTITA_DEB_MAINTAINER '${PARTITA_DEB_MAINTAINER}': lintian refuses a maintainer "
                      "address without a domain; give -DPARTITA_DEB_MAINTAINER=\"Name <user@example.org>\"")
endif()

set(_deb_dir ${PROJECT_SOURCE_DIR}/packaging/debian)
set(_deb_out ${PROJECT_BINARY_DIR}/debian)
set(PARTITA_DEB_RELEASE 1)
set(PARTITA_DEB_VERSION ${PROJECT_VERSION}-${PARTITA_DEB_RELEASE})

# The changelog's newest entry names the version it packages: a new version needs an entry.
file(STRINGS ${_deb_dir}/changelog.in _changelog_head LIMIT_COUNT 1)
if(NOT _changelog_head MATCHES "^partita \\(${PARTITA_DEB_VERSION}\\) ")
  message(FATAL_ERROR "packaging/debian/changelog.in starts with '${_changelog_head}', not an entry for "
                      "${PARTITA_DEB_VERSION}: add one for this version at its top")
endif()

# The copyright file: the licence's text as a DEP-5 continuation (each line indented, blank
# lines as " .").
if(PARTITA_DEB_LICENSE_FILE)
  file(STRINGS ${PARTITA_DEB_LICENSE_FILE} _license_lines)
else()
  set(_license_lines
    "The source tree states no licence: no permission beyond what copyright law"
    "allows is granted. Packagers who distribute these packages name the licence"
    "with -DPARTITA_DEB_LICENSE=<short name> -DPARTITA_DEB_LICENSE_FILE=<its text>.")
endif()
set(PARTITA_DEB_LICENSE_TEXT "")
foreach(_line IN LISTS _license_lines)
  if(_line STREQUAL "")
    set(_line ".")
  endif()
  string(APPEND PARTITA_DEB_LICENSE_TEXT " ${_line}\n")
endforeach()
string(REGEX REPLACE "\n$" "" PARTITA_DEB_LICENSE_TEXT "${PARTITA_DEB_LICENSE_TEXT}")
configure_file(${_deb_dir}/copyright.in ${_deb_out}/copyright @ONLY)
configure_file(${_deb_dir}/changelog.in ${_deb_out}/changelog.Debian @ONLY)
add_custom_command(OUTPUT ${_deb_out}/changelog.Debian.gz
  COMMAND gzip -9nkf ${_deb_out}/changelog.Debian
  DEPENDS ${_deb_out}/changelog.Debian
  COMMENT "Compressing the Debian changelog")
add_custom_target(partita_deb_changelog ALL DEPENDS ${_deb_out}/changelog.Debian.gz)

set(_deb_components partita dev)
if(TARGET partita_python)
  list(APPEND _deb_components python)
endif()
set(_deb_package_partita partita)
set(_deb_package_dev libpartita-dev)
set(_deb_package_python python3-partita)
# Package metadata, not part of an install into a prefix (EXCLUDE_FROM_ALL: only a
# component's install, which CPack makes, has it).
foreach(_component IN LISTS _deb_components)
  install(FILES ${_deb_out}/copyright ${_deb_out}/changelog.Debian.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${_deb_package_${_component}}
          COMPONENT ${_component} EXCLUDE_FROM_ALL)
endforeach()

# The service: absolute paths, which only the package installs (a prefix has no /etc).
install(FILES ${_deb_dir}/partita.service DESTINATION /lib/systemd/system COMPONENT partita EXCLUDE_FROM_ALL)
install(FILES ${_deb_dir}/partita.conf DESTINATION /etc/partita COMPONENT partita EXCLUDE_FROM_ALL)

# partita(1) from `partita --help` (which partita-full answers). Not in a sanitizer or fuzz
# tree: its instrumented binaries are for the tests, and their leak reports at exit would
# fail the build.
find_program(PARTITA_HELP2MAN help2man DOC "help2man, which makes the man page partita(1) from --help")
if(PARTITA_HELP2MAN AND NOT PARTITA_SANITIZE AND NOT PARTITA_FUZZ)
  set(_man ${PROJECT_BINARY_DIR}/man/partita.1)
  add_custom_command(OUTPUT ${_man}.gz
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man
    COMMAND ${PARTITA_HELP2MAN} --no-info --section 1
            --name "distributed GNN training on partitioned graphs"
            --include ${_deb_dir}/partita.h2m --output ${_man} $<TARGET_FILE:partita>
    COMMAND gzip -9nf ${_man}
    DEPENDS partita partita-full ${_deb_dir}/partita.h2m
    COMMENT "Making the man page partita(1) with help2man")
  add_custom_target(partita_man ALL DEPENDS ${_man}.gz)
  install(FILES ${_man}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT partita)
elseif(NOT PARTITA_HELP2MAN)
  message(STATUS "help2man not found: no man page partita(1) (the Debian package then lacks it)")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${_deb_components})
set(CPACK_PACKAGE_NAME partita)
set(CPACK_PACKAGE_VENDOR "Partita")
set(CPACK_PACKAGE_CONTACT "${PARTITA_DEB_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${PARTITA_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_RELEASE ${PARTITA_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)  # executables and the extension module; static libraries keep their symbols
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
# Each package's Description: its synopsis, then paragraphs (CPack indents the lines and
# writes an empty line as " .").
set(_deb_about
"Partita trains graph neural networks (GraphSAGE, GCN, GAT, R-GCN, link
prediction) on graphs partitioned over the machines of a cluster: each
machine keeps its partitions, samples their neighbourhoods and trains a
replica of the model, and the replicas' gradients are averaged every step.")

set(CPACK_DEBIAN_PARTITA_PACKAGE_NAME partita)
set(CPACK_DEBIAN_PARTITA_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PARTITA_DESCRIPTION "distributed GNN training runtime - command line and service
${_deb_about}

This package holds the partita command, its node daemon and the partita
systemd service, which runs a cluster's head or one of its nodes.")
set(CPACK_DEBIAN_PARTITA_PACKAGE_DEPENDS "adduser (>= 3.134), libopenblas0-pthread, plplot-driver-cairo")
set(CPACK_DEBIAN_PARTITA_PACKAGE_SUGGESTS "python3-partita")
set(CPACK_DEBIAN_PARTITA_PACKAGE_CONTROL_EXTRA
    ${_deb_dir}/postinst ${_deb_dir}/prerm ${_deb_dir}/postrm ${_deb_dir}/conffiles)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libpartita-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "distributed GNN training runtime - embedding API
${_deb_about}

This package holds the C++ headers, static libraries and CMake package
(find_package(Partita)) with which an application runs training jobs in
its own process or on partita daemons.")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF)  # static libraries only
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libcaf-dev (>= 0.17), libcaf-dev (<< 0.18), libtorch-dev (>= 1.13), libtorch-dev (<< 1.14), libcapnp-dev, \
libspdlog-dev, libyaml-cpp-dev, nlohmann-json3-dev (>= 3), libmetis-dev, zlib1g-dev, libssl-dev (>= 3), \
libcurl4-openssl-dev, libarchive-dev, liburing-dev, pkg-config, libopenblas0-pthread")
set(CPACK_DEBIAN_DEV_PACKAGE_SUGGESTS "partita")

if(TARGET partita_python)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-partita)
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
  set(CPACK_DEBIAN_PYTHON_DESCRIPTION "distributed GNN training runtime - Python 3 package
${_deb_about}

This package holds the Python package partita: graph partitions, samplers
and loaders for PyTorch Geometric, in process or on a cluster.")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "${PARTITA_PYTHON_DEB_DEPENDS}, libopenblas0-pthread")
  set(CPACK_DEBIAN_PYTHON_PACKAGE_SUGGESTS "partita, python3-torch")
endif()
include(CPack)
