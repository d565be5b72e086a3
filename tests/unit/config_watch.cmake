add_executable(config_watch_test config_watch_test.cc)
target_link_libraries(config_watch_test PRIVATE nvme_adapt_daemon_core GTest::gtest_main)
target_compile_definitions(config_watch_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(config_watch_test PROPERTIES LABELS unit)
