// SPDX-License-Identifier: Apache-2.0
// nvme-adapt-replay: runs a recorded trace of windows through the decision engine and its node gate alone and
// prints the decisions, one per line. The daemon records such traces with --record-windows.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agent/engine/trace.h"

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::fprintf(argc == 2 ? stdout : stderr,
                 "usage: nvme-adapt-replay TRACE\n"
                 "Replays a window trace (see agent/engine/trace.h for the format) through the decision\n"
                 "engine and prints every decision. '-' reads standard input.\n");
    return argc == 2 ? 0 : 2;
  }
  std::stringstream text;
  if (std::strcmp(argv[1], "-") == 0) {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(argv[1]);
    if (!in) {
      std::fprintf(stderr, "nvme-adapt-replay: cannot open %s: %s\n", argv[1], std::strerror(errno));
      return 1;
    }
    text << in.rdbuf();
  }
  auto decisions = nvmeadapt::engine::ReplayTrace(text.str());
  if (!decisions) {
    std::fprintf(stderr, "nvme-adapt-replay: %s: %s\n", argv[1], decisions.error().message.c_str());
    return 2;
  }
  for (const std::string& line : *decisions) std::printf("%s\n", line.c_str());
  return 0;
}
