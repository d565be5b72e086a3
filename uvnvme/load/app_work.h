// SPDX-License-Identifier: Apache-2.0
// The application's own CPU work per completion (--io-work-us): a compute loop the job's thread runs after
// each completion before it reaps the next, as fio's thinktime spin does. The work is a fixed number of
// loops calibrated once at start, not a wall-clock spin: when polling or another task takes the CPU, the same
// work takes longer and less of it is done per second, which is what the report shows.
#pragma once

#include <cstdint>

namespace nvmeadapt::uvnvme::load {

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns: what the calibration times.
int64_t ThreadCpuNanos();

// Loops of RunWorkLoops that take about `ns` of this thread's CPU (0 for ns <= 0). Taken from the fastest of
// several timed rounds, so a round the scheduler interrupted does not shrink the work.
uint64_t CalibrateWorkLoops(int64_t ns);

// Runs `loops` steps of a dependent arithmetic chain the compiler cannot drop; returns the chain's value.
uint64_t RunWorkLoops(uint64_t loops, uint64_t seed);

}  // namespace nvmeadapt::uvnvme::load
