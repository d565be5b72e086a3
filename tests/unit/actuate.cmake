# Levers: temporary trees for the file levers, an injected NVMe admin device, a fake uvnvme control socket.
# The fake admin device answers libnvme's ioctl(2) in the test program (fake_admin_device.h).
add_library(nvme_adapt_test_fake_admin STATIC fake_admin_device.cc)
target_link_libraries(nvme_adapt_test_fake_admin PUBLIC nvme_adapt_common nvme_adapt_libnvme)
add_executable(actuate_test actuate_sysfs_test.cc actuate_gsim_test.cc actuate_nvme_test.cc actuate_socket_test.cc
               actuate_resolver_test.cc actuate_registry_test.cc actuate_restore_point_test.cc actuate_reconnect_test.cc actuate_reconnect_settings_test.cc actuate_reconnect_digests_test.cc
               actuate_adaptive_poll_queue_test.cc actuate_nvmet_poll_task_test.cc levers_config_test.cc confined_write_test.cc)
target_link_libraries(actuate_test PRIVATE nvme_adapt_actuate nvme_adapt_test_fake_uvnvme nvme_adapt_test_fake_admin
                      GTest::gtest_main)
target_compile_definitions(actuate_test PRIVATE NVME_ADAPT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
gtest_discover_tests(actuate_test PROPERTIES LABELS unit)
