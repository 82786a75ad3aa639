# Finds METIS (Debian's libmetis-dev ships no CMake config).
# Defines METIS::METIS and METIS_IDX_WIDTH (32 on Debian).
find_path(METIS_INCLUDE_DIR metis.h)
find_library(METIS_LIBRARY metis)

if(METIS_INCLUDE_DIR)
  file(STRINGS "${METIS_INCLUDE_DIR}/metis.h" _metis_idx REGEX "^#define IDXTYPEWIDTH [0-9]+")
  string(REGEX REPLACE ".*IDXTYPEWIDTH ([0-9]+).*" "\\1" METIS_IDX_WIDTH "${_metis_idx}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(METIS REQUIRED_VARS METIS_LIBRARY METIS_INCLUDE_DIR METIS_IDX_WIDTH)

if(METIS_FOUND AND NOT TARGET METIS::METIS)
  add_library(METIS::METIS UNKNOWN IMPORTED)
  set_target_properties(METIS::METIS PROPERTIES
    IMPORTED_LOCATION "${METIS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${METIS_INCLUDE_DIR}")
endif()
mark_as_advanced(METIS_INCLUDE_DIR METIS_LIBRARY)
