# SPDX-License-Identifier: Apache-2.0
"""Draws eval-grid.png and eval-timeline.png with gnuplot from the evaluation's result: writes the data
files next to the images (eval-grid.dat, eval-timeline-*.dat) and runs grid.gp and timeline.gp."""
import os
import pathlib
import shutil
import subprocess

import summary

HERE = pathlib.Path(__file__).resolve().parent


class PlotError(RuntimeError):
    pass


def triple(s, mode, metric, scale=1.0):
    """median min max of one metric, times scale (NaN when the mode did not run)."""
    entry = s["modes"].get(mode, {}).get(metric)
    if not entry:
        return "NaN NaN NaN"
    return " ".join(f"{entry[k] * scale:.6g}" for k in ("median", "min", "max"))


def write_grid_data(result, path):
    lines = ["# label, then per mode (interrupt, poll, adaptive, shadow) median min max of: IOPS relative to the"
             " interrupt median; host CPU us per completion (adaptive, shadow: reapers + agent); process CPU us per"
             " completion (adaptive, shadow: + agent)"]
    for s in result["configs"]:
        irq = summary.median(s, "interrupt", "iops")
        # gnuplot reads \n in a double-quoted string as a line break: three lines per tick
        tick = s["config"]["label"].replace(" QD", "\\nQD") + (f"\\ninterrupt {irq / 1000:.0f}k" if irq else "")
        columns = [f'"{tick}"']
        for metric, scale in (("iops", 1 / irq if irq else float("nan")), ("host_plus_agent_cpu_us", 1.0),
                              ("process_plus_agent_cpu_us", 1.0)):
            columns += [triple(s, mode, metric, scale) for mode in summary.TABLE_MODES]
        lines.append(" ".join(columns))
    path.write_text("\n".join(lines) + "\n")


def write_phase_steps(timeline, directory, end):
    """eval-timeline-phases.dat: per phase boundary, each mode's IOPS and host CPU per completion (adaptive:
    + the agent), for gnuplot's steps; NaN for a mode that did not run."""
    modes = timeline.get("modes") or {"adaptive": {"phases": timeline["phases"]}}
    names = ("interrupt", "poll", "oracle", "adaptive")
    lines = ["# t_s then IOPS of interrupt poll oracle adaptive, then host CPU us/IO of the same"]
    phases = timeline["phases"]
    for index in range(len(phases) + 1):  # the last phase's figures once more at the end: steps draw to there
        t = phases[index]["start_s"] if index < len(phases) else end
        at = min(index, len(phases) - 1)
        row = [modes[m]["phases"][at] if m in modes else None for m in names]
        iops = [f"{p['iops']:.6g}" if p else "NaN" for p in row]
        cpu = [f"{p.get('host_plus_agent_cpu_us', p['host_cpu_us']):.6g}" if p and p["host_cpu_us"] else "NaN"
               for p in row]
        lines.append(" ".join([f"{t:.4g}"] + iops + cpu))
    (directory / "eval-timeline-phases.dat").write_text("\n".join(lines) + "\n")


def write_timeline_data(timeline, directory):
    """One rate file and one mode-step file per queue of the adaptive run; the three modes' per-phase figures;
    a gnuplot include with the phases."""
    end = sum(p["seconds"] for p in timeline["phases"])
    write_phase_steps(timeline, directory, end)
    names = []
    for index, (queue, data) in enumerate(sorted(timeline["queues"].items())):
        rates = ["# t_s rate_per_s mode(0 interrupt, 1 poll)"]
        rates += [f"{w['t_s']} {w['rate']} {1 if w['mode'] == 'poll' else 0}" for w in data["windows"]]
        (directory / f"eval-timeline-rate-{index}.dat").write_text("\n".join(rates) + "\n")
        steps, mode = ["# t_s mode(0 interrupt, 1 poll)", "0 0"], 0
        for switch in data["switches"]:
            mode = 1 if switch["mode"] == "poll" else 0
            steps.append(f"{switch['t_s']} {mode}")
        steps.append(f"{end} {mode}")
        (directory / f"eval-timeline-mode-{index}.dat").write_text("\n".join(steps) + "\n")
        names.append(queue)
    include = [f"queues = {len(names)}", f"t_end = {end}"]
    include += [f'queue_name_{i} = "{name}"' for i, name in enumerate(names)]
    for number, phase in enumerate(timeline["phases"], 1):
        start, stop = phase["start_s"], phase["start_s"] + phase["seconds"]
        shade = "#f0f0f0" if phase["name"] == "light" else "#fff2d9"
        text = f"{phase['name']} QD{phase['qd']}\\n{phase_iops_text(timeline, number - 1)}"
        include.append(f'phase_start_{number} = {start}; phase_end_{number} = {stop}; '
                       f'phase_color_{number} = "{shade}"; phase_text_{number} = "{text}"')
    include.append(f"phases = {len(timeline['phases'])}")
    engine = timeline["engine"]
    failed = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in sorted(engine["failed_tries"].items())) or "none failed"
    include.append(f'engine_text = "{engine["tries"]} polling tries ({failed}), {engine["polling_windows_kept"]} '
                   f'polling windows kept, {engine["backoffs"]} backoffs"')
    include.append(f'goal_text = "{goal_text(timeline)}"')
    (directory / "eval-timeline-setup.gp").write_text("\n".join(include) + "\n")


def phase_iops_text(timeline, index):
    """The oracle's and adaptive's IOPS in one phase, on two lines (the other modes are in the legend's steps):
    e.g. 'oracle 486k\\nadaptive 478k'."""
    modes = timeline.get("modes") or {"adaptive": {"phases": timeline["phases"]}}
    return "\\n".join(f"{m} {modes[m]['phases'][index]['iops'] / 1000:.0f}k" for m in ("oracle", "adaptive")
                       if m in modes)


def goal_text(timeline):
    """The phased run's goal checks in a few words, for the plot's title: adaptive against the oracle per phase."""
    goals = timeline.get("goals") or {}

    def words(name, what):
        checked = [g for g in goals.get(name, []) if g["ratio"] is not None]
        return f"{what} " + ", ".join(f"{g['phase'] + 1} x{g['ratio']:.2f}{'' if g['met'] else ' (NOT met)'}"
                                      for g in checked) if checked else ""

    parts = [w for w in (words("heavy_iops", "IOPS in heavy phase"), words("light_host_cpu", "CPU/IO in light phase"))
             if w]
    return "adaptive / oracle: " + "; ".join(parts) if parts else "goals not checked"


def gnuplot(script, **variables):
    if shutil.which("gnuplot") is None:
        raise PlotError("gnuplot missing (Debian package gnuplot-nox, in scripts/install-deps)")
    assignments = "; ".join(f'{k} = "{v}"' for k, v in variables.items())
    run = subprocess.run(["gnuplot", "-e", assignments, str(HERE / script)], capture_output=True, text=True)
    if run.returncode != 0:
        raise PlotError(f"gnuplot {script} failed: {run.stderr.strip()}")


def draw(result, results_dir):
    directory = pathlib.Path(results_dir)
    if result["configs"]:  # empty: the grid was skipped (--skip-grid)
        write_grid_data(result, directory / "eval-grid.dat")
        gnuplot("grid.gp", data=directory / "eval-grid.dat", out=directory / "eval-grid.png")
    if result["timeline"]:  # empty: the phased run was skipped (--skip-phased)
        write_timeline_data(result["timeline"], directory)
        gnuplot("timeline.gp", dir=str(directory) + os.sep, out=directory / "eval-timeline.png")
