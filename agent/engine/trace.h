// SPDX-License-Identifier: Apache-2.0
// A line-oriented text format for engine inputs and decisions, so that windows recorded by the daemon (or
// written by hand) can be replayed through the engine and its node gate alone and the decisions compared.
// Pure string processing: reading and writing files is the caller's business.
//
//   queue NAME [eligible=0|1] [reap=MODE] [safe=MODE] [POLICY...]
//   window NAME MODE COMPLETIONS START END [miss=K:ELAPSED[:N]]   (N: the reap's size, default 1)
//   timer NAME NOW START COMPLETIONS [LAST] [inflight=N] [unread=1]   (unread: the counters' read failed)
//   policy NAME NOW POLICY...
//   override NAME NOW MODE|none [expires=NS]
//   lever NAME NOW MODE
//   remove NAME
//   switch NAME GEN FROM->TO key=value...   (the agent's switch timeline; no engine input, skipped)
//   node KEY=VALUE...   nodequeue NAME ...   facts NOW ...   (the node layer's inputs: trace_node.h)
// POLICY is key=value, the keys the trace_key column of PolicyFields() (agent/engine/policy_fields.cc), or
// profile=NAME (PolicyProfiles(): every field but the mode; the words after it lay over it).
// Times are nanoseconds. '#' starts a comment.
//
// Writing: trace_format.h and trace_node.h. Reading: trace_words.h (words and values) under trace_replay.h
// (one decoder per record kind, feeding an Engine and a node gate of the replayer's own).
#pragma once

#include "agent/engine/trace_format.h"
#include "agent/engine/trace_node.h"
#include "agent/engine/trace_replay.h"
