# find_package(cyxla CONFIG) for an installed cyxla wheel, with two imported targets:
# cyxla::cyxla for an application without Python (libcyxla.so and the headers of
# include/cyxla) and cyxla::headers for an extension module (the headers alone: it takes
# the function table from cyxla._core when it imports, cyxla_import()). Found relative to
# this file, so the package may be moved; cyxla.get_cmake_dir() prints this directory.
get_filename_component(_cyxla_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET cyxla::cyxla)
  add_library(cyxla::cyxla SHARED IMPORTED)
  set_target_properties(cyxla::cyxla PROPERTIES
    IMPORTED_LOCATION "${_cyxla_prefix}/lib/libcyxla.so"
    IMPORTED_SONAME "libcyxla.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_cyxla_prefix}/include"
    # cyxla.hpp without Python: the runtime comes from libcyxla, not from cyxla._core.
    INTERFACE_COMPILE_DEFINITIONS "CYXLA_STANDALONE"
    # cyxla.hpp is C++20 (std::span): a consumer gets that standard from the target, as
    # from any package's, without setting CMAKE_CXX_STANDARD itself.
    INTERFACE_COMPILE_FEATURES "cxx_std_20"
  )
endif()
if(NOT TARGET cyxla::headers)
  add_library(cyxla::headers INTERFACE IMPORTED)
  set_target_properties(cyxla::headers PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_cyxla_prefix}/include")
endif()
set(cyxla_INCLUDE_DIR "${_cyxla_prefix}/include")
set(cyxla_LIBRARY "${_cyxla_prefix}/lib/libcyxla.so")
unset(_cyxla_prefix)
