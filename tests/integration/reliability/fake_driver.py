#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A userspace driver as hostile as the issue's reproducers (#37), speaking docs/uvnvme-control.md.

    fake_driver.py RUNTIME_DIR [--sockets N] [--controllers C] [--queues Q] [--repeat R] [--fifo-exe]
                   [--hostile-socket] [--not-utf8-socket] [--refuse-poll]

Listens on RUNTIME_DIR/uvnvme/PID.sock, and on N-1 more sockets named PID-K.sock that lead to the same
process. `list` answers C controllers of Q queues, every entry repeated R times; `set_mode` is taken and
remembered. --fifo-exe: the process runs from a copy of its interpreter, deletes that copy and puts a FIFO
where /proc/PID/exe says the executable was ("PATH (deleted)"). --hostile-socket: the first socket is named
PID + HOSTILE_SOCKET_NAME (escape sequences, a C1 control) instead of PID.sock; --not-utf8-socket: PID-\xff.sock.
--refuse-poll: every set_mode to poll is answered {"ok": false}. Prints "ready" once every socket listens.
"""
import argparse
import json
import os
import socket
import sys
import threading

# "-", an OSC that retitles the terminal, a BEL, a screen clear, CSI as a C1 control.
HOSTILE_SOCKET_NAME = b"-\x1b]0;pwned\x07\x1b[2J\xc2\x9b31m.sock"


def serve(listener, answer):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=talk, args=(conn, answer), daemon=True).start()


def talk(conn, answer):
    with conn:
        pending = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                conn.sendall((json.dumps(answer(json.loads(line)), separators=(",", ":")) + "\n").encode())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("runtime_dir")
    parser.add_argument("--sockets", type=int, default=1)
    parser.add_argument("--controllers", type=int, default=1)
    parser.add_argument("--queues", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--fifo-exe", action="store_true")
    parser.add_argument("--hostile-socket", action="store_true")
    parser.add_argument("--not-utf8-socket", action="store_true")
    parser.add_argument("--refuse-poll", action="store_true")
    args = parser.parse_args()
    modes = {(c, q): "interrupt" for c in range(args.controllers) for q in range(1, args.queues + 1)}
    lock = threading.Lock()

    def answer(request):
        with lock:
            if request.get("op") == "list":
                # The fields discovery reads, no more: 1,700 entries fit the agent's 64 KiB reply bound.
                queues = [{"ctrl": c, "qid": q, "mode": m} for (c, q), m in sorted(modes.items())] * args.repeat
                return {"ok": True, "pid": os.getpid(), "queues": queues}
            if request.get("op") == "set_mode" and args.refuse_poll and request.get("mode") == "poll":
                return {"ok": False, "error": "busy"}
            if request.get("op") == "set_mode" and (request.get("ctrl"), request.get("qid")) in modes:
                modes[(request["ctrl"], request["qid"])] = request["mode"]
                return {"ok": True, "mode": request["mode"]}
            return {"ok": False, "error": "unknown request"}

    if args.fifo_exe:
        exe = os.readlink("/proc/self/exe")
        os.unlink(exe)
        os.mkfifo(exe + " (deleted)")
        assert os.readlink("/proc/self/exe") == exe + " (deleted)"
    directory = os.path.join(args.runtime_dir, "uvnvme")
    os.makedirs(directory, mode=0o750, exist_ok=True)
    for k in range(args.sockets):
        name = f"{os.getpid()}.sock" if k == 0 else f"{os.getpid()}-{k}.sock"
        if k == 0 and args.hostile_socket:
            name = str(os.getpid()).encode() + HOSTILE_SOCKET_NAME
        if k == 0 and args.not_utf8_socket:
            name = str(os.getpid()).encode() + b"-\xff.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(os.path.join(os.fsencode(directory), name) if isinstance(name, bytes)
                      else os.path.join(directory, name))
        listener.listen(64)
        threading.Thread(target=serve, args=(listener, answer), daemon=True).start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
