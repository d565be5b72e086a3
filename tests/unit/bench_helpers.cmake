# bench/'s helpers for the benchmarks' machine settings (Python; moves only the test's own helper processes), the VM harness's retry and the
# guest's ICReq sniffer.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME device_cpu_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/device_cpu_test.py ${PROJECT_SOURCE_DIR}/bench)
set_tests_properties(device_cpu_unit PROPERTIES LABELS unit)
add_test(NAME host_idle_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/host_idle_test.py ${PROJECT_SOURCE_DIR}/bench)
set_tests_properties(host_idle_unit PROPERTIES LABELS unit)
# tests/vm/vmrun.py's retry after TCG's text-patching race (no QEMU: one boot is a stand-in).
add_test(NAME vmrun_retry_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/vmrun_retry_test.py ${PROJECT_SOURCE_DIR}/tests/vm)
set_tests_properties(vmrun_retry_unit PROPERTIES LABELS unit)

add_test(NAME icreq_sniff_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/icreq_sniff_test.py ${PROJECT_SOURCE_DIR}/tests/vm/guest)
set_tests_properties(icreq_sniff_unit PROPERTIES LABELS unit)
