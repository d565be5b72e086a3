# Metrics: unit tests without HTTP, and the exposition checks that serve over loopback (one exposer for the
# whole suite: its destructor takes about 2 s) against docs/metrics.md, the dashboards, the rules and promtool.
add_library(metrics_text_parser STATIC ${CMAKE_CURRENT_LIST_DIR}/metrics_text_parser.cc ${CMAKE_CURRENT_LIST_DIR}/metrics_docs.cc)
target_link_libraries(metrics_text_parser PUBLIC nvme_adapt_common)

add_executable(metrics_test ${CMAKE_CURRENT_LIST_DIR}/metrics_test.cc ${CMAKE_CURRENT_LIST_DIR}/metrics_options_test.cc)
target_link_libraries(metrics_test PRIVATE nvme_adapt_metrics nvme_adapt_config metrics_text_parser GTest::gtest_main)
gtest_discover_tests(metrics_test PROPERTIES LABELS unit)

add_executable(metrics_exposition_test ${CMAKE_CURRENT_LIST_DIR}/metrics_exposition_test.cc
                                       ${CMAKE_CURRENT_LIST_DIR}/metrics_dashboard_test.cc)
target_compile_definitions(metrics_exposition_test PRIVATE NVME_ADAPT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(metrics_exposition_test
  PRIVATE nvme_adapt_metrics metrics_text_parser nlohmann_json::nlohmann_json GTest::gtest_main)
gtest_discover_tests(metrics_exposition_test PROPERTIES LABELS unit)
