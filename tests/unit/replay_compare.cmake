# Runs nvme-adapt-replay on TRACE and compares its output with EXPECTED, line for line.
execute_process(COMMAND ${REPLAY} ${TRACE} OUTPUT_VARIABLE actual ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvme-adapt-replay failed (${rc}): ${err}")
endif()
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/replay.actual "${actual}")
  message(FATAL_ERROR "decisions differ from ${EXPECTED}; actual written to ${CMAKE_CURRENT_BINARY_DIR}/replay.actual\n"
                      "--- expected\n${expected}\n--- actual\n${actual}")
endif()
message(STATUS "replay matches ${EXPECTED}")
