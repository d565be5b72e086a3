# bench/'s helpers for the benchmarks' machine settings (Python; moves only the test's own helper processes).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME device_cpu_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/device_cpu_test.py ${PROJECT_SOURCE_DIR}/bench)
set_tests_properties(device_cpu_unit PROPERTIES LABELS unit)
add_test(NAME host_idle_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/host_idle_test.py ${PROJECT_SOURCE_DIR}/bench)
set_tests_properties(host_idle_unit PROPERTIES LABELS unit)
