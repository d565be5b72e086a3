// SPDX-License-Identifier: Apache-2.0
// The switch protocol's crash points (after_journal, after_publish, after_lever): common/failpoint.h.
#pragma once

#include "common/failpoint.h"
