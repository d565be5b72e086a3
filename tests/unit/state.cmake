# What the agent keeps on disk (agent/state/): the persisted policy, the journal and its restore, the state dir's
# lock, the identities an entry is checked against.
add_executable(state_test state_store_test.cc state_schema_version_test.cc journal_test.cc journal_torn_test.cc
               startup_restore_test.cc)
target_link_libraries(state_test PRIVATE nvme_adapt_state GTest::gtest_main)
target_compile_definitions(state_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(state_test PROPERTIES LABELS unit)
