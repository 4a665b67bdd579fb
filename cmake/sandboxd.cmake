# Helpers shared by every folder's CMakeLists.txt.

# sandboxd_library(NAME folder DEPS ...)
# The library of one top-level folder: every .cpp directly in it. Headers are
# included by their path from the repository root ("events/file_log.hpp").
# A folder whose sources are still to come is an INTERFACE library.
function(sandboxd_library folder)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  set(_target sandboxd_${folder})
  if(_srcs)
    add_library(${_target} STATIC ${_srcs})
    target_include_directories(${_target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${_target} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  else()
    add_library(${_target} INTERFACE)
    target_include_directories(${_target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${_target} INTERFACE ${ARG_DEPS})
  endif()
  add_library(sandboxd::${folder} ALIAS ${_target})
endfunction()

# sandboxd_test(NAME name SOURCES ... LIBS ... LABELS unit|integration|runtime
#               [FIXTURES ...] [TIMEOUT s] [COST s] [RUN_SERIAL])
# One Boost.Test binary, registered with ctest under the given labels.
function(sandboxd_test)
  cmake_parse_arguments(ARG "RUN_SERIAL" "NAME;TIMEOUT;COST" "SOURCES;LIBS;LABELS;FIXTURES"
    ${ARGN})
  sandboxd_test_binary(NAME ${ARG_NAME} SOURCES ${ARG_SOURCES} LIBS ${ARG_LIBS})
  set(_serial)
  if(ARG_RUN_SERIAL)
    set(_serial RUN_SERIAL)
  endif()
  sandboxd_test_run(NAME ${ARG_NAME} BINARY ${ARG_NAME} LABELS ${ARG_LABELS}
    FIXTURES ${ARG_FIXTURES} TIMEOUT "${ARG_TIMEOUT}" COST "${ARG_COST}" ${_serial})
endfunction()

# sandboxd_test_binary(NAME name SOURCES ... LIBS ...)
# A Boost.Test binary that ctest runs only through sandboxd_test_run entries.
function(sandboxd_test_binary)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_LIBS} sandboxd_test_main
    Boost::unit_test_framework)
  target_compile_definitions(${ARG_NAME} PRIVATE BOOST_TEST_DYN_LINK BOOST_TEST_NO_MAIN)
  sandboxd_test_code(${ARG_NAME})
endfunction()

# sandboxd_test_code(target): test code needs no -O2; at -O1 a test source compiles about a
# fifth faster (Boost.Test's macros expand to much code), and what it tests is still built
# with the project's flags in the libraries it links.
function(sandboxd_test_code target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo>:-O1>)
endfunction()

# sandboxd_test_run(NAME name BINARY target [ENV VAR=value ...] [ARGS ...] LABELS ...
#                   [FIXTURES ...] [TIMEOUT s] [COST s] [RUN_SERIAL])
# One more ctest entry for a test binary built once: a variant (another log, another
# runtime) is the same binary run with its own environment, not the same sources compiled
# again (docs/development.md, "The rule for a new test"). ARGS go to Boost.Test (a
# --run_test filter for cases that have nothing to test in a variant). COST is the entry's
# usual seconds: ctest -j starts the costliest entries first, so a fresh clone (no
# Testing/Temporary/CTestCostData.txt yet) does not end the run waiting on a long entry that
# happened to be declared last.
function(sandboxd_test_run)
  cmake_parse_arguments(ARG "RUN_SERIAL" "NAME;BINARY;TIMEOUT;COST" "ENV;ARGS;LABELS;FIXTURES"
    ${ARGN})
  add_test(NAME ${ARG_NAME} COMMAND ${ARG_BINARY} --color_output=no --log_level=test_suite
    ${ARG_ARGS})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  # Exit code 77: every test case was skipped (tests/support/test_main.cpp).
  set(_env SANDBOXD_SOURCE_DIR=${PROJECT_SOURCE_DIR} SANDBOXD_BINARY_DIR=${PROJECT_BINARY_DIR}
    ${ARG_ENV})
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
    SKIP_RETURN_CODE 77 ENVIRONMENT "${_env}")
  if(ARG_FIXTURES)
    set_tests_properties(${ARG_NAME} PROPERTIES FIXTURES_REQUIRED "${ARG_FIXTURES}")
  endif()
  if(ARG_RUN_SERIAL)
    set_tests_properties(${ARG_NAME} PROPERTIES RUN_SERIAL TRUE)
  endif()
  if(ARG_COST)
    set_tests_properties(${ARG_NAME} PROPERTIES COST ${ARG_COST})
  endif()
endfunction()

# sandboxd_driver_test(NAME name SOURCES ... LIBS ... DRIVERS hollow|crun|runsc ...
#                      [LABELS ...] [TIMEOUT s] [COST s] [RUN_SERIAL])
# A runtime or attack suite built once and run once per driver: the entries name_<driver>,
# each with SANDBOXD_TEST_DRIVER=<driver> in its environment
# (tests/runtime/driver_under_test.hpp). Without LABELS the hollow entry is `unit` and the
# others are `runtime`.
function(sandboxd_driver_test)
  cmake_parse_arguments(ARG "RUN_SERIAL" "NAME;TIMEOUT;COST" "SOURCES;LIBS;DRIVERS;LABELS" ${ARGN})
  sandboxd_test_binary(NAME ${ARG_NAME} SOURCES ${ARG_SOURCES} LIBS ${ARG_LIBS})
  set(_serial)
  if(ARG_RUN_SERIAL)
    set(_serial RUN_SERIAL)
  endif()
  foreach(_driver ${ARG_DRIVERS})
    if(ARG_LABELS)
      set(_labels ${ARG_LABELS})
    elseif(_driver STREQUAL "hollow")
      set(_labels unit)
    else()
      set(_labels runtime)
    endif()
    sandboxd_test_run(NAME ${ARG_NAME}_${_driver} BINARY ${ARG_NAME}
      ENV SANDBOXD_TEST_DRIVER=${_driver} LABELS ${_labels} TIMEOUT "${ARG_TIMEOUT}"
      COST "${ARG_COST}" ${_serial})
  endforeach()
endfunction()
