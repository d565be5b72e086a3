#!/usr/bin/python3
"""No container engine runs here, so the Dockerfile is checked against what it refers to: the package
file CPack really makes, the paths inside it, the daemon's default metrics port, the Kubernetes
DaemonSet (port, group id), and the build/runtime split (Debian 12, no compiler in the runtime image).

usage: dockerfile_test.py SOURCE_DIR DEB DAEMON_BINARY
"""
import fnmatch
import pathlib
import re
import shlex
import subprocess
import sys

import yaml

failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
    return condition


def instructions(dockerfile):
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical, pending = [], ""
    for line in dockerfile.read_text().splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    result = []
    for line in logical:
        keyword, _, rest = line.strip().partition(" ")
        result.append((keyword.upper(), rest.strip()))
    return result


def stages(parsed):
    out = []
    for keyword, rest in parsed:
        if keyword == "FROM":
            out.append({"from": rest, "steps": []})
        elif out:
            out[-1]["steps"].append((keyword, rest))
    return out


def exec_form(rest):
    return yaml.safe_load(rest) if rest.startswith("[") else shlex.split(rest)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: dockerfile_test.py SOURCE_DIR DEB DAEMON_BINARY")
    src, deb, daemon = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    parsed = stages(instructions(src / "deploy/docker/Dockerfile"))
    package_paths = {line.split()[-1].lstrip(".") for line in
                     subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                                    check=True).stdout.splitlines()}

    check(len(parsed) == 2, f"expected a build and a runtime stage, found {len(parsed)}")
    if len(parsed) != 2:
        return report()
    build, runtime = parsed
    build_image, _, build_name = build["from"].partition(" AS ")
    check(build_image.strip() == "debian:12", f"build stage is FROM {build_image}, expected debian:12")
    check(runtime["from"] == "debian:12-slim", f"runtime stage is FROM {runtime['from']}, expected debian:12-slim")
    build_runs = " ".join(rest for keyword, rest in build["steps"] if keyword == "RUN")
    check("scripts/install-deps" in build_runs, "build stage does not run scripts/install-deps")
    check(re.search(r"\bmake package\b", build_runs) is not None, "build stage does not run make package")
    workdir = next((rest for keyword, rest in build["steps"] if keyword == "WORKDIR"), None)

    copies = [shlex.split(rest) for keyword, rest in runtime["steps"] if keyword == "COPY"]
    deb_copies = [c for c in copies if c and c[0] == f"--from={build_name.strip()}"]
    if check(len(deb_copies) == 1, f"runtime stage has no single COPY --from={build_name.strip()}: {copies}"):
        source = pathlib.PurePosixPath(deb_copies[0][1])
        check(fnmatch.fnmatch(deb.name, source.name), f"COPY pattern {source.name} does not match {deb.name}")
        check(str(source.parent) == f"{workdir}/build",
              f"COPY takes the package from {source.parent}; make package writes it to {workdir}/build")
    runtime_runs = " ".join(rest for keyword, rest in runtime["steps"] if keyword == "RUN")
    check(re.search(r"apt-get install[^&]*/tmp/nvme-adapt_\*\.deb", runtime_runs) is not None,
          "runtime stage does not apt-get install the package (its Depends bring the libraries)")
    for tool in ("build-essential", "g++", "gcc", "clang", "cmake", "ninja-build", "install-deps", "-dev"):
        check(tool not in runtime_runs, f"runtime stage installs build tooling: {tool}")

    entrypoint = next((exec_form(rest) for keyword, rest in runtime["steps"] if keyword == "ENTRYPOINT"), [])
    check(entrypoint[:1] == ["/usr/sbin/nvme-adaptd"], f"ENTRYPOINT is {entrypoint}")
    check("/usr/sbin/nvme-adaptd" in package_paths, "the package has no /usr/sbin/nvme-adaptd")

    help_text = subprocess.run([daemon, "--help"], capture_output=True, text=True, check=True).stdout
    default_port = re.search(r"--metrics-listen ADDR.*default [^:]+:(\d+)", help_text).group(1)
    exposed = [rest.split("/")[0] for keyword, rest in runtime["steps"] if keyword == "EXPOSE"]
    check(exposed == [default_port], f"EXPOSE {exposed}, the daemon's default metrics port is {default_port}")
    cmd = next((exec_form(rest) for keyword, rest in runtime["steps"] if keyword == "CMD"), [])
    check(f"--metrics-listen=0.0.0.0:{default_port}" in cmd, f"CMD {cmd} does not listen on 0.0.0.0:{default_port}")

    daemonset = yaml.safe_load((src / "deploy/kubernetes/base/daemonset.yaml").read_text())
    pod = daemonset["spec"]["template"]["spec"]
    ports = [p["containerPort"] for p in pod["containers"][0]["ports"]]
    check(ports == [int(default_port)], f"DaemonSet containerPort {ports} != EXPOSE {default_port}")
    gid_args = [rest.split("=", 1)[1] for keyword, rest in runtime["steps"]
                if keyword == "ARG" and rest.startswith("NVME_ADAPT_GID=")]
    check(len(gid_args) == 1 and [int(gid_args[0])] == pod["securityContext"].get("supplementalGroups"),
          f"ARG NVME_ADAPT_GID {gid_args} != DaemonSet supplementalGroups {pod['securityContext']}")
    check("--gid \"$NVME_ADAPT_GID\" nvme-adapt" in runtime_runs, "runtime stage does not create group nvme-adapt with NVME_ADAPT_GID")
    return report()


def report():
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print(f"Dockerfile: {len(failures)} problems")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
