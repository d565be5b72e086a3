# The nvme-pci module's in-driver policy (kmod/nvme-pci/src), compiled as userspace C++ against the engine.
add_executable(kmod_policy_test kmod_policy_differential_test.cc)
target_include_directories(kmod_policy_test PRIVATE ${PROJECT_SOURCE_DIR}/bpf)
target_link_libraries(kmod_policy_test PRIVATE nvme_adapt_engine GTest::gtest_main)
gtest_discover_tests(kmod_policy_test PROPERTIES LABELS unit)
