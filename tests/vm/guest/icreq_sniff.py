#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Records the digests every NVMe/TCP queue negotiates on the guest's loopback: the kernel shows them nowhere,
the wire does. Each queue's connection starts with an ICReq (host to target, PDU type 0) answered by an ICResp
(type 1); byte 11 of both is DGST (bit 0 header digest, bit 1 data digest). A classic BPF filter on the socket
passes only TCP segments whose payload starts like one of the two, so the NVMe I/O itself never reaches this
process (a sniffer that read every segment would slow the one-vCPU guest's fio runs).

  icreq_sniff.py PORT OUT       one line per PDU: "UPTIME icreq|icresp SPORT DPORT HDGST DDGST"; OUT.ready
                                once the filter is attached. Runs until killed.
"""

import ctypes
import socket
import struct
import sys

ETH_P_ALL = 0x0003
SO_ATTACH_FILTER = 26
PACKET_OUTGOING = 4

# Ethernet (lo's is all zeros) + IPv4 + TCP; A/X as in classic BPF. Out-of-bounds loads (no payload) drop.
FILTER = [
    (0x28, 0, 0, 12),      # ldh [12]            ethertype
    (0x15, 0, 15, 0x800),  # jeq IPv4 else drop
    (0x30, 0, 0, 23),      # ldb [23]            IP protocol
    (0x15, 0, 13, 6),      # jeq TCP else drop
    (0x28, 0, 0, 20),      # ldh [20]            fragment offset
    (0x45, 11, 0, 0x1FFF), # jset: a fragment: drop
    (0xB1, 0, 0, 14),      # ldxb 4*([14]&0xf)   X = IP header length
    (0x50, 0, 0, 26),      # ldb [x+26]          TCP data offset
    (0x74, 0, 0, 4),       # rsh 4
    (0x64, 0, 0, 2),       # lsh 2               TCP header length
    (0x0C, 0, 0, 0),       # add x
    (0x07, 0, 0, 0),       # tax                 X = IP + TCP header length
    (0x50, 0, 0, 14),      # ldb [x+14]          payload[0]: PDU type
    (0x25, 3, 0, 1),       # jgt 1: drop
    (0x50, 0, 0, 16),      # ldb [x+16]          payload[2]: header length
    (0x15, 0, 1, 128),     # jeq 128 else drop
    (0x06, 0, 0, 0x40000), # accept
    (0x06, 0, 0, 0),       # drop
]


def _initialization_pdu(payload, sport, dport, port):
    """"icreq", "icresp" or None. The filter looks at two bytes only: a segment that starts inside a data PDU
    can pass it (vm_fabrics_6_1 once recorded an "icreq" from the target's port). A real ICReq goes to the
    target's port and an ICResp comes from it, both are exactly 128 bytes (PLEN) with no data offset, PDU
    format version 0 and only the two digest bits in DGST."""
    if len(payload) < 128:
        return None
    kind = {0: "icreq", 1: "icresp"}[payload[0]]
    towards_target = dport == port
    if towards_target != (kind == "icreq") or (sport == port) == towards_target:
        return None
    plen = struct.unpack("<I", payload[4:8])[0]
    pfv = struct.unpack("<H", payload[8:10])[0]
    if plen != 128 or payload[3] != 0 or pfv != 0 or payload[11] & ~0x3:
        return None
    return kind


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    program = b"".join(struct.pack("HBBI", *insn) for insn in FILTER)
    buffer = ctypes.create_string_buffer(program)
    fprog = struct.pack("HL", len(FILTER), ctypes.addressof(buffer))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    sock.bind(("lo", 0))
    with open(out + ".ready", "w") as ready:
        ready.write("attached\n")
    with open(out, "a", buffering=1) as lines:
        while True:
            frame, address = sock.recvfrom(65535)
            if address[2] == PACKET_OUTGOING:  # lo shows every segment twice: once out, once in
                continue
            ip = frame[14:]
            ihl = (ip[0] & 0x0F) * 4
            tcp = ip[ihl:]
            sport, dport = struct.unpack("!HH", tcp[:4])
            payload = tcp[(tcp[12] >> 4) * 4:]
            kind = _initialization_pdu(payload, sport, dport, port)
            if kind is None:
                continue
            with open("/proc/uptime") as uptime:
                now = uptime.read().split()[0]
            lines.write(f"{now} {kind} {sport} {dport} {payload[11] & 1} {(payload[11] >> 1) & 1}\n")


if __name__ == "__main__":
    main()
