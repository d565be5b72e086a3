# The node layer through the daemon and replay alike: a trace recorded with it on replays to the daemon's
# decisions (its tests are named node_replay.*).
add_executable(agent_node_replay_test agent_node_replay_test.cc)
target_link_libraries(agent_node_replay_test PRIVATE nvme_adapt_daemon_core GTest::gtest_main)
gtest_discover_tests(agent_node_replay_test TEST_PREFIX "node_replay." PROPERTIES LABELS unit)
target_compile_definitions(agent_node_replay_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
