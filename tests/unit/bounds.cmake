# Bounds on what peers and the machine can push (issue #37): log escaping, /proc/interrupts of any size.
add_executable(bounds_test bounds_log_test.cc bounds_interrupts_test.cc)
target_link_libraries(bounds_test PRIVATE nvme_adapt_discover nvme_adapt_actuate GTest::gtest_main)
target_compile_definitions(bounds_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(bounds_test PROPERTIES LABELS unit)
