"""Another process holding a build lock, as a concurrent run would, until it is killed::

holder = hold_lock_in_child(control_url, lake_root, "table:gold.revenue")
...
os.kill(holder.pid, signal.SIGKILL)
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from medallion_assets.runtime.locks import Holder, build_locks
    locks = build_locks(sys.argv[1], Path(sys.argv[2]))
    with locks.hold(sys.argv[3], Holder.now("child-run"), 5) as held:
        print("held" if held else "not held", flush=True)
        time.sleep(600)
    """
)


def hold_lock_in_child(control_url: str, lake: Path, name: str) -> subprocess.Popen[str]:
    """A process that holds the lock ``name`` (it has taken it when this returns)."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, control_url, str(lake), name],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child
