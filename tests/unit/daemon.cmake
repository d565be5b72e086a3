add_executable(daemon_core_test policy_book_test.cc
  agent_loop_test.cc agent_policy_test.cc agent_fleet_policy_test.cc policy_reset_test.cc agent_timer_test.cc agent_switch_test.cc agent_offloop_test.cc agent_policy_offloop_test.cc
  agent_policy_atomic_test.cc policy_writer_test.cc
  agent_log_volume_test.cc
  queue_roster_test.cc agent_listener_test.cc switch_recovery_test.cc
  serial_workers_test.cc flags_test.cc payoff_listener_test.cc)
target_link_libraries(daemon_core_test PRIVATE nvme_adapt_daemon_core GTest::gtest_main)
gtest_discover_tests(daemon_core_test PROPERTIES LABELS unit)

add_executable(real_ports_test real_ports_test.cc)
target_link_libraries(real_ports_test PRIVATE nvme_adapt_daemon_wiring nvme_adapt_test_fake_uvnvme nvme_adapt_test_fake_admin
                      GTest::gtest_main)
target_compile_definitions(real_ports_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(real_ports_test PROPERTIES LABELS unit)
