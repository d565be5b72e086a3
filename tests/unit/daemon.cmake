add_executable(daemon_core_test policy_book_test.cc
  agent_loop_test.cc agent_policy_test.cc agent_fleet_policy_test.cc policy_reset_test.cc agent_timer_test.cc agent_switch_test.cc agent_offloop_test.cc agent_policy_offloop_test.cc
  agent_policy_atomic_test.cc policy_writer_test.cc
  agent_log_volume_test.cc
  queue_roster_test.cc agent_listener_test.cc switch_recovery_test.cc
  serial_workers_test.cc flags_test.cc check_config_test.cc payoff_listener_test.cc agent_state_metrics_test.cc
  agent_node_selector_test.cc agent_pause_test.cc)
target_link_libraries(daemon_core_test PRIVATE nvme_adapt_daemon_core GTest::gtest_main)
target_compile_definitions(daemon_core_test PRIVATE NVME_ADAPT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
gtest_discover_tests(daemon_core_test PROPERTIES LABELS unit)

add_executable(real_ports_test real_ports_test.cc)
target_link_libraries(real_ports_test PRIVATE nvme_adapt_daemon_wiring nvme_adapt_test_fake_uvnvme nvme_adapt_test_fake_admin
                      GTest::gtest_main)
target_compile_definitions(real_ports_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(real_ports_test PROPERTIES LABELS unit)

# nvme-adaptd --check-config as a binary: every shipped config passes, a bad one exits 2 naming the field; as
# nobody too (no root, no BPF, no socket, no state dir).
add_test(NAME daemon_check_config_shipped
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/check_config_binary_test.py ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE:nvme-adaptd>)
set_tests_properties(daemon_check_config_shipped PROPERTIES LABELS unit TIMEOUT 60)
