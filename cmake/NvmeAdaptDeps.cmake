# Finds every dependency the way Debian 12 ships it: CMake configs for gRPC, prometheus-cpp,
# GTest, benchmark, absl, nlohmann_json and CLI11; FindProtobuf for Protobuf; pkg-config for libbpf and
# libsystemd; the header and library for libnvme (its pkg-config file requires json-c's, which
# libnvme-dev does not bring: a dynamic link needs neither).
# A missing package fails configuration with the Debian package that provides it.
find_package(PkgConfig REQUIRED)

macro(nvme_adapt_require found package)
  if(NOT ${found})
    message(FATAL_ERROR "missing dependency: install Debian package '${package}' (scripts/install-deps does it)")
  endif()
endmacro()

find_package(Protobuf)
nvme_adapt_require(Protobuf_FOUND "libprotobuf-dev protobuf-compiler")
find_package(gRPC CONFIG)
nvme_adapt_require(gRPC_FOUND "libgrpc++-dev protobuf-compiler-grpc")
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin)
nvme_adapt_require(GRPC_CPP_PLUGIN "protobuf-compiler-grpc")
find_package(prometheus-cpp CONFIG)
nvme_adapt_require(prometheus-cpp_FOUND "prometheus-cpp-dev")
find_package(nlohmann_json CONFIG)
nvme_adapt_require(nlohmann_json_FOUND "nlohmann-json3-dev")
find_package(CLI11 CONFIG)
nvme_adapt_require(CLI11_FOUND "libcli11-dev")
pkg_check_modules(LIBBPF IMPORTED_TARGET libbpf)
nvme_adapt_require(LIBBPF_FOUND "libbpf-dev")
pkg_check_modules(LIBSYSTEMD IMPORTED_TARGET libsystemd)
nvme_adapt_require(LIBSYSTEMD_FOUND "libsystemd-dev")
find_path(LIBNVME_INCLUDE_DIR libnvme.h)
find_library(LIBNVME_LIBRARY nvme)
nvme_adapt_require(LIBNVME_INCLUDE_DIR "libnvme-dev")
nvme_adapt_require(LIBNVME_LIBRARY "libnvme-dev")
add_library(nvme_adapt_libnvme INTERFACE)
target_include_directories(nvme_adapt_libnvme SYSTEM INTERFACE ${LIBNVME_INCLUDE_DIR})
target_link_libraries(nvme_adapt_libnvme INTERFACE ${LIBNVME_LIBRARY})
find_package(Threads REQUIRED)

if(BUILD_TESTING)
  find_package(GTest CONFIG)
  nvme_adapt_require(GTest_FOUND "libgtest-dev libgmock-dev")
endif()
find_package(benchmark CONFIG)
nvme_adapt_require(benchmark_FOUND "libbenchmark-dev")
