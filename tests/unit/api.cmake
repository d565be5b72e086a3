# The API's rules (config, validation, status codes), its auth decisions and token, the event bus, and nvme-adaptctl's
# parsing and tables: no sockets here (tests/integration/api/ has those).
add_executable(api_unit_test api_rules_test.cc api_token_test.cc event_bus_test.cc ctl_test.cc ctl_report_test.cc
                             ctl_completion_test.cc)
target_link_libraries(api_unit_test PRIVATE nvme_adapt_api nvme_adapt_ctl GTest::gtest_main)
gtest_discover_tests(api_unit_test PROPERTIES LABELS unit)

# The completion scripts in the shells themselves: bash and zsh run them with the words typed so far.
add_test(NAME ctl_completion_shells
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/ctl_completion_shells.sh $<TARGET_FILE:nvme-adaptctl>)
set_tests_properties(ctl_completion_shells PROPERTIES LABELS unit)
