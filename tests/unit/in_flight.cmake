# The reconnect lever's in-flight journal entry through the daemon's switch (issue #37 item 3).
add_executable(agent_in_flight_test agent_in_flight_test.cc)
target_link_libraries(agent_in_flight_test PRIVATE nvme_adapt_daemon_core GTest::gtest_main)
gtest_discover_tests(agent_in_flight_test PROPERTIES LABELS unit)
