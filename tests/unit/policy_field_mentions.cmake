# Issue 33's must-show: each of settle_windows, pace_credit, stall_backoff and max_poll_windows is mentioned
# by at most 4 source files outside the engine's rule code (the policy-field table carries the rest).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME policy_field_mentions
         COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/count-field-mentions --root ${PROJECT_SOURCE_DIR}
                 --limit 4)
set_tests_properties(policy_field_mentions PROPERTIES LABELS unit)
