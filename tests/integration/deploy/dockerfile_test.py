#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The Dockerfile checked against what it refers to: the package file make package really makes, the paths inside
it, the daemon's default metrics port, the Kubernetes DaemonSet (port, group id), and the build/runtime
split (Debian 12, no compiler in the runtime image). The image itself is built and run by
tests/integration/container (that builds it from a made package, never from the build stage).

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
    """The ARGs before the first FROM (name: default), and the stages in order."""
    global_args, out = {}, []
    for keyword, rest in parsed:
        if keyword == "FROM":
            image, _, name = rest.partition(" AS ")
            out.append({"from": image.strip(), "name": name.strip(), "steps": []})
        elif out:
            out[-1]["steps"].append((keyword, rest))
        elif keyword == "ARG":
            name, _, default = rest.partition("=")
            global_args[name] = default
    return global_args, out


def exec_form(rest):
    return yaml.safe_load(rest) if rest.startswith("[") else shlex.split(rest)


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: dockerfile_test.py SOURCE_DIR DEB DAEMON_BINARY")
    src, deb, daemon = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
    global_args, parsed = stages(instructions(src / "deploy/docker/Dockerfile"))
    package_paths = {line.split()[-1].lstrip(".") for line in
                     subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                                    check=True).stdout.splitlines()}

    named = {stage["name"]: stage for stage in parsed if stage["name"]}
    check(set(named) == {"build", "context", "package"},
          f"expected the stages build, context and package before the runtime stage, found {sorted(named)}")
    check(parsed[-1]["name"] == "" if parsed else False, "the last stage (the image) has a name")
    if failures:
        return report()
    build, context, package, runtime = named["build"], named["context"], named["package"], parsed[-1]
    check(build["from"] == "debian:12", f"build stage is FROM {build['from']}, expected debian:12")
    check(global_args.get("BASE") == "debian:12-slim", f"ARG BASE defaults to {global_args.get('BASE')}, expected debian:12-slim")
    check(runtime["from"] == "${BASE}", f"the image is FROM {runtime['from']}, expected ${{BASE}}")
    check(global_args.get("PACKAGE_FROM") == "build", "ARG PACKAGE_FROM does not default to the build stage")
    check(package["from"] == "${PACKAGE_FROM}" and not package["steps"],
          f"stage package is FROM {package['from']} with steps {package['steps']}: expected only FROM ${{PACKAGE_FROM}}")
    build_runs = " ".join(rest for keyword, rest in build["steps"] if keyword == "RUN")
    check("scripts/install-deps" in build_runs, "build stage does not run scripts/install-deps")
    check(re.search(r"\bmake package\b", build_runs) is not None, "build stage does not run make package")
    workdir = next((rest for keyword, rest in build["steps"] if keyword == "WORKDIR"), None)
    check(re.search(r"cp build/packages/nvme-adapt_\*\.deb /out/", build_runs) is not None and workdir == "/src",
          "build stage does not put the package that make package writes to /src/build/packages into /out")
    context_copies = [shlex.split(rest) for keyword, rest in context["steps"] if keyword == "COPY"]
    check(context["from"] == "scratch" and context_copies == [["nvme-adapt_*.deb", "/out/"]],
          f"stage context is not FROM scratch with COPY nvme-adapt_*.deb /out/: {context}")
    check(fnmatch.fnmatch(deb.name, "nvme-adapt_*.deb"), f"nvme-adapt_*.deb does not match {deb.name}")

    copies = [shlex.split(rest) for keyword, rest in runtime["steps"] if keyword == "COPY"]
    check(copies == [["--from=package", "/out/nvme-adapt_*.deb", "/tmp/"]],
          f"the image's COPY is {copies}, expected --from=package /out/nvme-adapt_*.deb /tmp/")
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
