# uvnvme: queue pairs, emulated controller, its interrupts, model, control protocol and socket, load options.
add_executable(uvnvme_test uvnvme_queue_test.cc uvnvme_timing_test.cc uvnvme_protocol_test.cc uvnvme_server_test.cc
               uvnvme_load_options_test.cc uvnvme_affinity_test.cc uvnvme_interrupt_test.cc uvnvme_app_work_test.cc)
target_link_libraries(uvnvme_test PRIVATE uvnvme_load GTest::gtest_main)
gtest_discover_tests(uvnvme_test PROPERTIES LABELS unit TIMEOUT 120)

# Heavy: 2 x 10,000 mode switches under load, and a coalescing run. Serial, so timing-free bounds hold
# without other tests competing for the 2 cores.
add_executable(uvnvme_stress_test uvnvme_stress_test.cc)
target_link_libraries(uvnvme_stress_test PRIVATE uvnvme_load GTest::gtest_main)
gtest_discover_tests(uvnvme_stress_test PROPERTIES LABELS unit RUN_SERIAL TRUE TIMEOUT 300)
