# Collector unit tests (no root): hook selection with a faked kernel, the procfs fallback on a captured
# tree, record conversion. The real BPF programs are tested in tests/bpf (label bpf).
add_executable(collect_test collect_hook_plan_test.cc collect_procfs_test.cc collect_records_test.cc
               collect_nvme_disks_test.cc)
target_link_libraries(collect_test PRIVATE nvme_adapt_collect GTest::gtest_main)
target_compile_definitions(collect_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(collect_test PROPERTIES LABELS unit)
