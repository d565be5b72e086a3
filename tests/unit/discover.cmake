# Discovery: captured sysfs trees (tests/data/sysfs) and a fake uvnvme control socket server.
add_library(nvme_adapt_test_fake_uvnvme STATIC fake_uvnvme.cc)
target_link_libraries(nvme_adapt_test_fake_uvnvme PUBLIC nvme_adapt_warnings nlohmann_json::nlohmann_json Threads::Threads)
target_include_directories(nvme_adapt_test_fake_uvnvme PUBLIC "${PROJECT_SOURCE_DIR}")

add_executable(discover_test discover_kernel_test.cc discover_parse_test.cc discover_diff_test.cc
               discover_uvnvme_test.cc discover_hostile_test.cc discover_fabrics_test.cc
               discover_target_test.cc discover_reaper_threads_test.cc)
target_link_libraries(discover_test PRIVATE nvme_adapt_discover nvme_adapt_test_fake_uvnvme GTest::gtest_main)
target_compile_definitions(discover_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(discover_test PROPERTIES LABELS unit)
