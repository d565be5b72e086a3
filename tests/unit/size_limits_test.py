#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of scripts/check-sizes on a made-up tree: what it counts, what it exempts (tests/ from the
function limit, bpf/*.bpf.{c,h} from both), how the exception list excuses and how it goes stale.

Usage: size_limits_test.py PATH_TO_check-sizes"""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECKER = sys.argv.pop(1) if len(sys.argv) > 1 else "scripts/check-sizes"


def function(name, lines):
    """A C++ function definition `lines` lines long, first line to closing brace."""
    body = [f"  x += {i};" for i in range(lines - 3)]
    return "\n".join([f"int {name}(int x) {{", *body, "  return x;", "}"]) + "\n"


def padding(lines):
    return "".join(f"// line {i}\n" for i in range(lines))


class CheckSizes(unittest.TestCase):
    def run_on(self, files, exceptions=""):
        with tempfile.TemporaryDirectory() as d:
            root = pathlib.Path(d)
            for path, text in files.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
            (root / "exceptions").write_text(exceptions)
            run = subprocess.run([sys.executable, CHECKER, "--root", d, "--exceptions", str(root / "exceptions")],
                                 capture_output=True, text=True)
            return run.returncode, run.stdout + run.stderr

    def test_a_tree_within_the_limits_passes(self):
        code, out = self.run_on({"agent/a/ok.cc": function("Fits", 80) + padding(320)})
        self.assertEqual(code, 0, out)
        self.assertIn("0 over the limits", out)

    def test_a_file_over_400_lines_is_named(self):
        code, out = self.run_on({"agent/a/big.cc": padding(401), "uvnvme/fits.h": padding(400)})
        self.assertEqual(code, 1, out)
        self.assertIn("agent/a/big.cc: 401 lines (limit 400)", out)
        self.assertNotIn("fits.h", out)

    def test_a_function_over_80_lines_is_named_with_its_line(self):
        code, out = self.run_on({"agent/a/long.cc": padding(2) + function("TooLong", 81)})
        self.assertEqual(code, 1, out)
        self.assertIn("agent/a/long.cc:3: function TooLong is 81 lines (limit 80)", out)

    def test_a_long_lambda_and_a_long_method_are_named(self):
        lambda_text = "auto f = [](int x) {\n" + "".join(f"  x += {i};\n" for i in range(80)) + "  return x;\n};\n"
        method = "namespace nvmeadapt::a {\nstruct S {\n" + function("Method", 90) + "};\n}\n"
        code, out = self.run_on({"agent/a/lambda.cc": lambda_text, "agent/a/method.h": method})
        self.assertEqual(code, 1, out)
        self.assertIn("agent/a/lambda.cc:1: function lambda-in-file-scope is 83 lines", out)
        self.assertIn("agent/a/method.h:3: function a::S::Method is 90 lines", out)

    def test_tests_are_exempt_from_the_function_limit_but_not_the_file_limit(self):
        code, out = self.run_on({"tests/unit/long_test.cc": function("LongTest", 200),
                                 "tests/unit/big_test.cc": padding(401)})
        self.assertEqual(code, 1, out)
        self.assertNotIn("LongTest", out)
        self.assertIn("tests/unit/big_test.cc: 401 lines", out)

    def test_the_bpf_hot_path_is_exempt_and_other_bpf_headers_are_not(self):
        code, out = self.run_on({"bpf/prog.bpf.c": function("Hot", 200) + padding(300),
                                 "bpf/queue.bpf.h": padding(500), "bpf/shared.h": function("Shared", 81)})
        self.assertEqual(code, 1, out)
        self.assertNotIn("prog.bpf.c", out)
        self.assertNotIn("queue.bpf.h", out)
        self.assertIn("bpf/shared.h:1: function Shared is 81 lines", out)

    def test_listed_exceptions_pass_and_are_reported(self):
        code, out = self.run_on({"uvnvme/big.cc": padding(401), "agent/a/long.cc": function("Long", 81)},
                                "# why\nfile uvnvme/big.cc\nfunction agent/a/long.cc Long  # who removes it\n")
        self.assertEqual(code, 0, out)
        self.assertIn("known exception: uvnvme/big.cc: 401 lines", out)
        self.assertIn("known exception: agent/a/long.cc:1: function Long is 81 lines", out)

    def test_an_exception_within_its_limit_fails_until_it_is_removed(self):
        code, out = self.run_on({"uvnvme/small.cc": padding(10)}, "file uvnvme/small.cc\n")
        self.assertEqual(code, 1, out)
        self.assertIn("'file uvnvme/small.cc' is within its limit now (or gone): remove it", out)

    def test_a_malformed_exception_line_is_refused_with_its_line_number(self):
        code, out = self.run_on({}, "# fine\nfunction only-a-path.cc\n")
        self.assertEqual(code, 2, out)
        self.assertIn("exceptions:2: expected 'file PATH' or 'function PATH NAME'", out)


if __name__ == "__main__":
    unittest.main()
