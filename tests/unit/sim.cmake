# The scale model (sim/, docs/scale.md): event ordering, cost accounting, closed-form cases, policies.
add_executable(sim_test sim_test.cc)
target_link_libraries(sim_test PRIVATE nvme_adapt_sim GTest::gtest_main)
gtest_discover_tests(sim_test PROPERTIES LABELS unit)

# The bench script's reading of uvnvme.json: what it derives and how it refuses what it cannot use.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME sim_bench_inputs
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/sim_bench_test.py ${PROJECT_SOURCE_DIR}/bench)
set_tests_properties(sim_bench_inputs PROPERTIES LABELS unit)
