# The size limits of docs/code-rules.md (scripts/check-sizes, Universal Ctags): the tree, and the checker on
# a made-up tree of its own.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME source_size_limits
         COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/check-sizes --root ${PROJECT_SOURCE_DIR})
add_test(NAME source_size_limits_checker
         COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/size_limits_test.py
                 ${PROJECT_SOURCE_DIR}/scripts/check-sizes)
set_tests_properties(source_size_limits source_size_limits_checker PROPERTIES LABELS unit)
