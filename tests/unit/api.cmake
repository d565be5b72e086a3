# The API's rules (config, validation, status codes), its auth decisions and token, the event bus, and nvme-adaptctl's
# parsing and tables: no sockets here (tests/integration/api/ has those).
add_executable(api_unit_test api_rules_test.cc api_token_test.cc event_bus_test.cc ctl_test.cc ctl_report_test.cc)
target_link_libraries(api_unit_test PRIVATE nvme_adapt_api nvme_adapt_ctl GTest::gtest_main)
gtest_discover_tests(api_unit_test PROPERTIES LABELS unit)
