// Moved to common/clock.h: the basics uvnvme and the agent share live below both (docs/code-rules.md). This
// forwarding header stays until agent/daemon and agent/actuate include common/ directly.
#pragma once

#include "common/clock.h"
