# The default config shipped by the Debian package and the Kubernetes ConfigMap parses as the daemon parses it.
add_executable(deploy_config_test deploy_config_test.cc)
target_link_libraries(deploy_config_test PRIVATE nvme_adapt_config GTest::gtest_main)
target_compile_definitions(deploy_config_test PRIVATE
                           NVME_ADAPT_DEFAULT_CONFIG="${PROJECT_SOURCE_DIR}/deploy/config/config.json")
gtest_discover_tests(deploy_config_test PROPERTIES LABELS unit)
