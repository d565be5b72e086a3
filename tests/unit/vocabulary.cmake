# common/vocabulary.h and its tables, with their API numbers (agent/config/proto_enums.h).
add_executable(vocabulary_test vocabulary_test.cc)
target_link_libraries(vocabulary_test PRIVATE nvme_adapt_config GTest::gtest_main)
gtest_discover_tests(vocabulary_test PROPERTIES LABELS unit)

# The vocabulary and the engine stay below the API: no protobuf or gRPC header in common/ or agent/engine.
add_test(NAME vocabulary_includes_no_proto
         COMMAND sh -c "! grep -rnE '#include .*(\\.pb\\.h|protobuf|grpc)' '${PROJECT_SOURCE_DIR}/common' '${PROJECT_SOURCE_DIR}/agent/engine'")
set_tests_properties(vocabulary_includes_no_proto PROPERTIES LABELS unit)
