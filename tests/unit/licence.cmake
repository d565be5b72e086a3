# Licences (issue 46): every tracked source file names its SPDX licence (scripts/check-spdx), and the checker
# itself on a made-up git tree of its own.
add_test(NAME source_spdx_identifiers COMMAND ${PROJECT_SOURCE_DIR}/scripts/check-spdx ${PROJECT_SOURCE_DIR})
add_test(NAME source_spdx_identifiers_checker
         COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/spdx_check_test.sh ${PROJECT_SOURCE_DIR}/scripts/check-spdx)
set_tests_properties(source_spdx_identifiers source_spdx_identifiers_checker PROPERTIES LABELS unit)
