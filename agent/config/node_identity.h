// SPDX-License-Identifier: Apache-2.0
// What node selectors match (issue 46, as the Node Tuning Operator matches Tuned profiles to nodes): the node's
// hostname and kernel release (uname) and its labels, read from a file in the format of a Kubernetes downward
// API volume's metadata.labels: one `key="value"` line a label, the value quoted as Go's %q quotes it.
#pragma once

#include <string>
#include <string_view>

#include "agent/engine/policy_selectors.h"
#include "common/result.h"

namespace nvmeadapt::config {

// The labels of `text`, read from `path`, as engine::NodeIdentity::labels ("key=value" lines sorted by key);
// an error names the path and line of a label it cannot take.
Result<std::string> ParseLabelsFile(std::string_view text, const std::string& path);

// uname's nodename and release, and the labels of `labels_file` ("" for none: no labels).
Result<engine::NodeIdentity> ReadNodeIdentity(const std::string& labels_file);

}  // namespace nvmeadapt::config
