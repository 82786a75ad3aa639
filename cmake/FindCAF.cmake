# Finds the C++ Actor Framework 0.17 (Debian's libcaf-dev ships no CMake config).
# Defines CAF::core, CAF::io and CAF::openssl.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
find_library(CAF_OPENSSL_LIBRARY caf_openssl)

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE ".*CAF_VERSION ([0-9]+).*" "\\1" _caf_v "${_caf_version}")
  if(_caf_v)
    math(EXPR _major "${_caf_v} / 10000")
    math(EXPR _minor "(${_caf_v} / 100) % 100")
    math(EXPR _patch "${_caf_v} % 100")
    set(CAF_VERSION "${_major}.${_minor}.${_patch}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_OPENSSL_LIBRARY CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION)

if(CAF_FOUND)
  foreach(_component core io openssl)
    string(TOUPPER ${_component} _upper)
    if(NOT TARGET CAF::${_component})
      add_library(CAF::${_component} UNKNOWN IMPORTED)
      set_target_properties(CAF::${_component} PROPERTIES
        IMPORTED_LOCATION "${CAF_${_upper}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
    endif()
  endforeach()
  set_property(TARGET CAF::io APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::core)
  set_property(TARGET CAF::openssl APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::io)
endif()
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_OPENSSL_LIBRARY)
