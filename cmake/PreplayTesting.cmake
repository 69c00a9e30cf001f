# Helpers every module uses to register its tests, so the way a test is run
# (environment, labels, sanitizer settings) is decided in one place.

# Environment every test sees: where the built tools are and how the build was made.
set(PREPLAY_TEST_ENV
  "PREPLAY_BIN=$<TARGET_FILE_DIR:preplay>/preplay"
  "PREPLAY_BUILD_DIR=${CMAKE_BINARY_DIR}"
  "PREPLAY_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
  "PREPLAY_SANITIZE=$<IF:$<BOOL:${PREPLAY_SANITIZE}>,1,0>"
  "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:verify_asan_link_order=0"
  "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")

# preplay_add_unit_test(NAME SOURCES src... [LIBS lib...])
# A cmocka test program; skipped at configure time (with a message) without cmocka.
function(preplay_add_unit_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT CMOCKA_FOUND)
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE PkgConfig::CMOCKA ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS unit ENVIRONMENT "${PREPLAY_TEST_ENV}" TIMEOUT 300)
endfunction()

# preplay_add_script_test(NAME SCRIPT path [TIMEOUT s] [LABELS l...])
# An integration test written as a script; it gets PREPLAY_BIN and friends.
function(preplay_add_script_test name)
  cmake_parse_arguments(T "" "SCRIPT;TIMEOUT" "LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${T_SCRIPT})
  set_tests_properties(${name} PROPERTIES LABELS "integration;${T_LABELS}"
    ENVIRONMENT "${PREPLAY_TEST_ENV}" TIMEOUT ${T_TIMEOUT})
endfunction()

# preplay_add_fuzz_target(NAME SOURCES src... [LIBS lib...])
# A libFuzzer target, built only in the PREPLAY_FUZZ build; tools/check runs
# every executable in ${CMAKE_BINARY_DIR}/fuzz/ for a bounded time, starting
# from the seed corpus tests/fuzz/corpus/NAME/ when it exists.
function(preplay_add_fuzz_target name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;CORPUS" ${ARGN})
  if(NOT PREPLAY_FUZZ)
    return()
  endif()
  add_executable(${name} ${T_SOURCES})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${T_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
endfunction()
