# Install-time script: installs the public headers and every project header they include,
# transitively, so the installed tree compiles on its own and a header that gains an
# include needs no list updated. Called through install(CODE) with
#   PARTITA_SOURCE_DIR          the source tree, which headers' includes are relative to
#   PARTITA_PUBLIC_HEADERS      the roots: the headers a host application includes
#   PARTITA_HEADER_DESTINATION  where, under the install prefix (e.g. include/partita)
# Only "quoted" includes are followed; <angled> ones are the dependencies' headers. A public
# header must not include a generated header (messages/*.capnp.h stay private): that is an
# error naming both headers.
cmake_policy(PUSH)
cmake_policy(VERSION 3.25)  # install scripts run with no policies set (IN_LIST needs CMP0057)

set(_pending ${PARTITA_PUBLIC_HEADERS})
set(_headers)
while(_pending)
  list(POP_FRONT _pending _header)
  if(_header IN_LIST _headers)
    continue()
  endif()
  list(APPEND _headers "${_header}")
  file(STRINGS "${PARTITA_SOURCE_DIR}/${_header}" _lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" _included "${_line}")
    if(NOT EXISTS "${PARTITA_SOURCE_DIR}/${_included}")
      message(FATAL_ERROR "${_header} includes \"${_included}\", which is not a header of the source tree "
                          "(a generated one?): public headers may include only source headers")
    endif()
    list(APPEND _pending "${_included}")
  endforeach()
endwhile()

list(SORT _headers)
foreach(_header IN LISTS _headers)
  get_filename_component(_dir "${_header}" DIRECTORY)
  file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/${PARTITA_HEADER_DESTINATION}/${_dir}" TYPE FILE
       FILES "${PARTITA_SOURCE_DIR}/${_header}")
endforeach()
cmake_policy(POP)
