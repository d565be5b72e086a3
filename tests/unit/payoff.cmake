# The payoff accounting (agent/engine/payoff.h) over the real engine's decisions.
add_executable(payoff_test ${CMAKE_CURRENT_LIST_DIR}/payoff_test.cc)
target_link_libraries(payoff_test PRIVATE nvme_adapt_payoff GTest::gtest_main)
target_include_directories(payoff_test PRIVATE ${PROJECT_SOURCE_DIR})
gtest_discover_tests(payoff_test PROPERTIES LABELS unit)
