#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Loads and attaches each program of a BPF object on its own (libbpf through ctypes), runs a command while
they are attached and writes, per program: section, loaded, attached, hits, and libbpf's messages.

  attach_probe.py OBJECT OUT.json -- COMMAND...

Each program gets its own copy of the object with only that program autoloaded, so one hook that the kernel
refuses does not keep the others from loading. The exit status is the command's.
"""

import ctypes
import json
import os
import subprocess
import sys
import time

libbpf = ctypes.CDLL("libbpf.so.1", use_errno=True)
libc = ctypes.CDLL(None)
vp, cp = ctypes.c_void_p, ctypes.c_char_p
for name, restype, argtypes in [
    ("bpf_object__open_file", vp, [cp, vp]),
    ("bpf_object__next_program", vp, [vp, vp]),
    ("bpf_object__load", ctypes.c_int, [vp]),
    ("bpf_object__close", None, [vp]),
    ("bpf_object__find_map_by_name", vp, [vp, cp]),
    ("bpf_program__name", cp, [vp]),
    ("bpf_program__section_name", cp, [vp]),
    ("bpf_program__set_autoload", ctypes.c_int, [vp, ctypes.c_bool]),
    ("bpf_program__attach", vp, [vp]),
    ("bpf_link__destroy", ctypes.c_int, [vp]),
    ("bpf_map__lookup_elem", ctypes.c_int, [vp, vp, ctypes.c_size_t, vp, ctypes.c_size_t, ctypes.c_uint64]),
    ("libbpf_major_version", ctypes.c_uint32, []),
    ("libbpf_minor_version", ctypes.c_uint32, []),
]:
    fn = getattr(libbpf, name)
    fn.restype, fn.argtypes = restype, argtypes

# libbpf's messages go to the program being loaded; va_list is passed on as an opaque pointer (x86-64 ABI).
PRINT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, cp, vp)
libc.vsnprintf.argtypes = [cp, ctypes.c_size_t, cp, vp]
messages = []


@PRINT_FN
def _libbpf_print(level, fmt, args):
    buf = ctypes.create_string_buffer(4096)
    libc.vsnprintf(buf, len(buf), fmt, args)
    if level <= 1:  # warnings and info; debug output is the whole verifier log
        messages.append(buf.value.decode(errors="replace").rstrip())
    return 0


libbpf.libbpf_set_print.restype = vp
libbpf.libbpf_set_print.argtypes = [PRINT_FN]
libbpf.libbpf_set_print(_libbpf_print)


def _programs(obj):
    prog = libbpf.bpf_object__next_program(obj, None)
    while prog:
        yield prog
        prog = libbpf.bpf_object__next_program(obj, prog)


def _load_one(path, index):
    """Opens the object with only program `index` autoloaded; returns (report, obj, link, programs in obj)."""
    messages.clear()
    obj = libbpf.bpf_object__open_file(path.encode(), None)
    if not obj:
        raise SystemExit(f"attach_probe: cannot open {path}: errno {ctypes.get_errno()}")
    progs = list(_programs(obj))
    for i, prog in enumerate(progs):
        libbpf.bpf_program__set_autoload(prog, i == index)
    prog = progs[index]
    report = {"program": libbpf.bpf_program__name(prog).decode(),
              "section": libbpf.bpf_program__section_name(prog).decode(),
              "loaded": False, "attached": False, "hits": None}
    link = None
    err = libbpf.bpf_object__load(obj)
    if err:
        report["error"] = f"load: {os.strerror(-err)}"
    else:
        report["loaded"] = True
        link = libbpf.bpf_program__attach(prog)
        if link:
            report["attached"] = True
        else:
            report["error"] = f"attach: {os.strerror(ctypes.get_errno())}"
    report["libbpf"] = list(messages)
    return report, obj, link, len(progs)


def _hits(obj):
    key, value = ctypes.c_uint32(0), ctypes.c_uint64(0)
    hits_map = libbpf.bpf_object__find_map_by_name(obj, b"hits")
    if libbpf.bpf_map__lookup_elem(hits_map, ctypes.byref(key), 4, ctypes.byref(value), 8, 0):
        return None
    return value.value


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        raise SystemExit(__doc__)
    path, out, command = argv[0], argv[1], argv[3:]
    start = time.monotonic()
    first = _load_one(path, 0)
    count = first[3]
    loaded = [first[:3]] + [_load_one(path, index)[:3] for index in range(1, count)]
    attached = time.monotonic()
    status = subprocess.run(command).returncode
    ran = time.monotonic()
    reports = []
    for report, obj, link in loaded:
        if link:
            report["hits"] = _hits(obj)
            libbpf.bpf_link__destroy(link)
        libbpf.bpf_object__close(obj)
        reports.append(report)
    print(f"attach_probe: {sum(r['attached'] for r in reports)}/{count} programs attached in "
          f"{attached - start:.1f}s, command {ran - attached:.1f}s, detach {time.monotonic() - ran:.1f}s", flush=True)
    version = f"{libbpf.libbpf_major_version()}.{libbpf.libbpf_minor_version()}"
    with open(out, "w") as f:
        json.dump({"libbpf": version, "command_status": status, "programs": reports}, f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
