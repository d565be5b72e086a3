#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of the guest's ICReq/ICResp sniffer (tests/vm/guest/icreq_sniff.py): its socket filter passes any
segment whose first bytes look like an initialization PDU, so the sniffer itself keeps only real ones. A
segment from the middle of a read's data that starts like an ICReq must not count as a connection that ran
without digests (what made vm_fabrics_6_1 fail once).

Usage: icreq_sniff_test.py PATH_TO_tests/vm/guest"""
import struct
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1) if len(sys.argv) > 1 else "tests/vm/guest")
import icreq_sniff  # noqa: E402

TARGET = 4420


def pdu(kind, digests, plen=128, pdo=0, pfv=0, length=128):
    """An ICReq (0) or ICResp (1) common header + the fields the sniffer reads, zero-padded to length."""
    head = struct.pack("<BBBBIHBB", kind, 0, 128, pdo, plen, pfv, 0, digests)
    return head + bytes(length - len(head))


class InitializationPduTest(unittest.TestCase):
    def classify(self, payload, sport, dport):
        return icreq_sniff._initialization_pdu(payload, sport, dport, TARGET)

    def test_an_icreq_to_the_target_and_its_icresp_are_recorded(self):
        self.assertEqual(self.classify(pdu(0, 3), 51358, TARGET), "icreq")
        self.assertEqual(self.classify(pdu(1, 3), TARGET, 51358), "icresp")

    def test_an_icreq_longer_segment_still_counts(self):
        self.assertEqual(self.classify(pdu(0, 1, length=300), 51358, TARGET), "icreq")

    def test_data_from_the_target_that_starts_like_an_icreq_is_ignored(self):
        self.assertIsNone(self.classify(pdu(0, 1), TARGET, 51358))
        self.assertIsNone(self.classify(pdu(1, 1), 51358, TARGET))

    def test_data_with_a_wrong_length_offset_version_or_digest_bits_is_ignored(self):
        for bad in (pdu(0, 3, plen=4096), pdu(0, 3, pdo=8), pdu(0, 3, pfv=1), pdu(0, 0x83)):
            self.assertIsNone(self.classify(bad, 51358, TARGET))

    def test_a_short_segment_or_another_port_is_ignored(self):
        self.assertIsNone(self.classify(pdu(0, 3)[:64], 51358, TARGET))
        self.assertIsNone(self.classify(pdu(0, 3), 51358, 4421))


if __name__ == "__main__":
    unittest.main(verbosity=2)
