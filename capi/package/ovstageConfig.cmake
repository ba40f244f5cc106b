# CMake package of libovstage: `find_package(ovstage 0.3 REQUIRED)` then link `ovstage::ovstage`
# (the library and its include directory). Relocatable: the prefix is found from this file's
# place, <prefix>/lib/cmake/ovstage, in the build tree (build/) and in an install prefix alike.
get_filename_component(_ovstage_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(_ovstage_library "${_ovstage_prefix}/lib/libovstage.so")
set(_ovstage_include "${_ovstage_prefix}/include")

if(NOT EXISTS "${_ovstage_library}" OR NOT EXISTS "${_ovstage_include}/ovstage/ovstage.h")
  set(ovstage_FOUND FALSE)
  set(ovstage_NOT_FOUND_MESSAGE
      "ovstage: ${_ovstage_library} or ${_ovstage_include}/ovstage/ovstage.h is missing")
  return()
endif()

if(NOT TARGET ovstage::ovstage)
  add_library(ovstage::ovstage SHARED IMPORTED)
  set_target_properties(ovstage::ovstage PROPERTIES
    IMPORTED_LOCATION "${_ovstage_library}"
    IMPORTED_SONAME "libovstage.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_ovstage_include}")
endif()

set(ovstage_INCLUDE_DIRS "${_ovstage_include}")
set(ovstage_LIBRARIES ovstage::ovstage)
unset(_ovstage_prefix)
unset(_ovstage_library)
unset(_ovstage_include)
