# bench/eval's trace reading, aggregation and goal checks (Python, no root, no timing).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME eval_bench_unit
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/eval_bench_test.py ${PROJECT_SOURCE_DIR}/bench/eval)
set_tests_properties(eval_bench_unit PROPERTIES LABELS unit)
