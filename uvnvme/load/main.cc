// SPDX-License-Identifier: Apache-2.0
// uvnvme-load: the uvnvme driver under a fio-like load. See --help and docs/uvnvme.md.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string_view>
#include <vector>

#include "uvnvme/control_server.h"
#include "uvnvme/driver.h"
#include "uvnvme/load/options.h"
#include "uvnvme/load/report.h"
#include "uvnvme/load/runner.h"

using namespace nvmeadapt::uvnvme;

int main(int argc, char** argv) {
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  for (std::string_view arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << load::LoadUsage();
      return 0;
    }
  }
  auto options = load::ParseLoadOptions(args);
  if (!options) {
    std::fprintf(stderr, "uvnvme-load: %s\n", options.error().message.c_str());
    return 2;
  }
  // With --controller-cpus and --host-cpus, before any thread exists: every thread created from here on
  // (control server, reapers; the device threads until they take their own CPUs) starts on the host CPUs,
  // so no ordinary thread of ours is ever runnable on the device's CPU.
  if (auto pinned = load::PinToNonDeviceCpus(*options, "main thread"); !pinned) {
    std::fprintf(stderr, "uvnvme-load: %s\n", pinned.error().message.c_str());
    return 1;
  }
  // Blocked here, before any thread exists, so every thread inherits the mask and the phase loop alone
  // takes SIGINT/SIGTERM: the run ends early, drains, removes its socket and still reports.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto driver = Driver::Create(options->driver);
  if (!driver) {
    std::fprintf(stderr, "uvnvme-load: %s\n", driver.error().message.c_str());
    return 1;
  }
  if (auto started = (*driver)->Start(); !started) {
    std::fprintf(stderr, "uvnvme-load: %s\n", started.error().message.c_str());
    return 1;
  }
  std::unique_ptr<ControlServer> server;
  if (options->socket) {
    auto created = ControlServer::Start(options->runtime_dir, **driver, load::NonDeviceCpus(*options));
    if (!created) {
      std::fprintf(stderr, "uvnvme-load: control socket: %s (use --runtime-dir or --no-socket)\n",
                   created.error().message.c_str());
      return 1;
    }
    server = std::move(*created);
    std::fprintf(stderr, "uvnvme-load: control socket %s\n", server->path().c_str());
  }
  auto result = load::RunLoad(*options, **driver, &stop_signals);
  server.reset();
  (*driver)->Stop();
  if (!result) {
    std::fprintf(stderr, "uvnvme-load: %s\n", result.error().message.c_str());
    return 1;
  }
  const auto report = load::ReportJson(*options, *result);
  if (options->json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << load::ReportText(*options, *result);
  }
  if (report["protocol_errors"].get<uint64_t>() > 0 || report["submitted"] != report["completed"]) {
    std::fprintf(stderr, "uvnvme-load: driver bug: lost, duplicated or stale completions (see the report)\n");
    return 1;
  }
  return 0;
}
