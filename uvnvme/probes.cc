// SPDX-License-Identifier: Apache-2.0
#include "uvnvme/probes.h"

extern "C" {
__extension__ volatile unsigned short uvnvme_complete_semaphore __attribute__((section(".probes"), used)) = 0;
__extension__ volatile unsigned short uvnvme_irq_semaphore __attribute__((section(".probes"), used)) = 0;
__extension__ volatile unsigned short uvnvme_mode_semaphore __attribute__((section(".probes"), used)) = 0;
__extension__ volatile unsigned short uvnvme_tally_semaphore __attribute__((section(".probes"), used)) = 0;
}
