// SPDX-License-Identifier: Apache-2.0
// Which lever serves a controller (config `levers`, docs/levers.md), what this machine offers, and whether the
// levers the config names can serve the controllers it names them for. Every fact about a lever comes from
// its traits (lever_registry.h): none is named here.
//
// Order: a per-controller choice; else the source's (levers.kernel_lever / levers.uvnvme_lever; for an NVMe/TCP
// host only a lever that serves tcp hosts); else AUTO: the first lever in AUTO's order (LeverTraits::auto_rank)
// that serves the source and that this machine offers the controller (LeverTraits::offered). The levers that
// reset or disconnect the controller are never picked by AUTO. Where nothing serves the controller (an NVMe
// target's queues without our nvmet's polling-queue task, a tcp host without its lever, block devices, SPDK),
// the stand-in records shadow decisions.
// An explicit choice is kept even where the machine lacks the lever (Apply then fails with kUnsupported, which
// the daemon reports). `levers.dry_run` makes every lever a dry run.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "agent/actuate/lever.h"
#include "agent/actuate/lever_registry.h"
#include "agent/config/levers_config.h"
#include "agent/discover/types.h"

namespace nvmeadapt::actuate {

// What the machine offers a controller, as far as resolving needs to know.
struct LeverFacts {
  // The levers AUTO may pick for it that this machine shows it offers (those offered wherever their source is
  // need no probe and are not listed).
  std::set<LeverKind> offered;
  // Our nvmet's polling-queue task is loaded (/sys/module/nvmet/pqt): says why its lever passed the
  // controller over, where it did.
  bool nvmet_polling_task = false;
  bool Offers(LeverKind kind) const { return offered.count(kind) > 0; }
};

LeverFacts ProbeLeverFacts(const config::LeverSettings& settings, const discover::Controller& controller,
                           const LeverEnvironment& environment);

struct LeverChoice {
  LeverKind kind{};      // a registered lever: never kAuto
  bool dry_run = false;  // the lever records instead of writing
  std::string why;       // e.g. "levers.controllers[1]", "kernel default: GSIM present"
  // No lever serves the controller: its queues get shadow decisions in any mode but off, never a pretended
  // switch.
  bool shadow_only = false;
};

// Pure.
LeverChoice ResolveLever(const config::LeverSettings& settings, const discover::Controller& controller,
                         const LeverFacts& facts);

// Each lever the settings name serves the controllers it is named for, and takes the settings given for it
// (the connection digests); the error names the field, as config validation does ("levers.kernel_lever: ...").
Status CheckLeverChoices(const config::LeverSettings& settings);

}  // namespace nvmeadapt::actuate
