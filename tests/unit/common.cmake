# common/: results, files, the duration grammar and the log's rate limit (the vocabulary has vocabulary.cmake).
add_executable(common_test result_test.cc files_test.cc duration_test.cc log_rate_limit_test.cc)
target_link_libraries(common_test PRIVATE nvme_adapt_common GTest::gtest_main absl::time)
gtest_discover_tests(common_test PROPERTIES LABELS unit)
