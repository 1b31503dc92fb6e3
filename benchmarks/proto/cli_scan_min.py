# Copyright: sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""What `sandboxguard scan PATH --json --budget 0` costs when the CLI imports only the
walker (not every command module) and writes its JSON report in one write().

    /work/main/.venv/bin/python benchmarks/proto/cli_scan_min.py PATH

Used to measure the start-up part of (a); not a replacement for the CLI.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "python", "src"))

from sandboxguard import strip


def main():
    report = strip.run(sys.argv[1:], actions=("setid", "caps"), dry_run=True, budget=0)
    sys.stdout.write(json.dumps(report, indent=2, sort_keys=True) + "\n")
    return 1 if strip.findings_remain(report) else 0


if __name__ == "__main__":
    sys.exit(main())
