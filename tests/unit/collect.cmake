# Collector unit tests (no root): hook selection with a faked kernel, the procfs fallback on a captured
# tree, record conversion. The real BPF programs are tested in tests/bpf (label bpf).
add_executable(collect_test collect_hook_plan_test.cc collect_procfs_test.cc collect_records_test.cc
               collect_nvme_disks_test.cc collect_node_facts_test.cc)
target_link_libraries(collect_test PRIVATE nvme_adapt_collect GTest::gtest_main)
target_compile_definitions(collect_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(collect_test PROPERTIES LABELS unit)

# ELF note and symbol reading (agent/collect/elf_hooks.cc) on small binaries built for it, each with its
# own USDT notes and symbols.
set(elf_fixtures PLAIN FIXTURE_PLAIN UVNVME FIXTURE_UVNVME_COMPLETE,FIXTURE_UVNVME_TALLY
    UVNVME_COMPLETE_ONLY FIXTURE_UVNVME_COMPLETE OTHER_PROVIDER FIXTURE_OTHER_PROVIDER SPDK FIXTURE_SPDK)
add_executable(collect_elf_hooks_test collect_elf_hooks_test.cc)
target_link_libraries(collect_elf_hooks_test PRIVATE nvme_adapt_collect GTest::gtest_main)
while(elf_fixtures)
  list(POP_FRONT elf_fixtures fixture definitions)
  string(REPLACE "," ";" definitions "${definitions}")
  string(TOLOWER "elf_hooks_fixture_${fixture}" fixture_target)
  add_executable(${fixture_target} elf_hooks_fixture.cc)
  target_include_directories(${fixture_target} SYSTEM PRIVATE "${SDT_INCLUDE_DIR}")
  target_compile_definitions(${fixture_target} PRIVATE ${definitions})
  target_compile_definitions(collect_elf_hooks_test PRIVATE ELF_FIXTURE_${fixture}="$<TARGET_FILE:${fixture_target}>")
  add_dependencies(collect_elf_hooks_test ${fixture_target})
endwhile()
gtest_discover_tests(collect_elf_hooks_test PROPERTIES LABELS unit)
