"""Type-check the core with mypy and fail when it reports more errors than the cap (issue 16).

Usage: python .ci/mypy_cap.py CAP   (run from the repository root; settings in pyproject.toml [tool.mypy])
"""

from __future__ import annotations

import subprocess
import sys


def main() -> int:
    cap = int(sys.argv[1])
    proc = subprocess.run([sys.executable, "-m", "mypy", "core/recallite_core"], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash): no count to trust
        print(f"mypy did not run (exit code {proc.returncode})", file=sys.stderr)
        return 2
    errors = sum(1 for line in proc.stdout.splitlines() if ": error:" in line)
    if errors > cap:
        print(f"mypy: {errors} errors in core/recallite_core, the cap is {cap}", file=sys.stderr)
        return 1
    print(f"mypy: {errors} errors (cap {cap})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
