# common/: results, files and the log's rate limit (the vocabulary has vocabulary.cmake).
add_executable(common_test result_test.cc files_test.cc log_rate_limit_test.cc)
target_link_libraries(common_test PRIVATE nvme_adapt_common GTest::gtest_main)
gtest_discover_tests(common_test PROPERTIES LABELS unit)
