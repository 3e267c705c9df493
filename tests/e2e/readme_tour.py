"""The README's tour, as a user follows it after the demo ran (tests/e2e/test_pipeline.py runs
it last, on its demo): the table the tour adds is built, the rule it breaks blocks it (exit 3,
nothing published), the fix publishes it, its history lists the versions, and the backfill
preview runs. The SQL, the YAML and the commands are read from README.md itself, so the test
fails when the guide and the product part."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MEDALLION = str(Path(sys.executable).parent / "medallion")


def tour() -> str:
    text = (REPO / "README.md").read_text()
    return text[text.index("## A 10-minute tour") : text.index("## Your own project")]


def medallion(root: Path, env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    assert words[0] == "medallion", command
    return subprocess.run(
        [MEDALLION, *words[1:], "--project", str(root)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )


def follow_the_tour(root: Path, env: dict[str, str]) -> None:
    """Steps 3 to 6 of the tour on ``root``, a demo project that ran (steps 1 and 2)."""
    text = tour()
    # Step 3: the SQL file of the heredoc, then the commands after it.
    sql_path, sql = re.search(r"cat > (\S+) <<'SQL'\n(.*?)\nSQL\n", text, re.S).groups()  # type: ignore[union-attr]
    (root / sql_path).write_text(sql + "\n")
    step3 = text[text.index("**3. Add a table.**") : text.index("**4.")]
    commands = [line for line in step3.splitlines() if line.startswith("medallion ")]
    assert commands == ["medallion catalog validate", "medallion build gold.orders_per_country"]
    for command in commands:
        done = medallion(root, env, command)
        assert done.returncode == 0, command + "\n" + done.stdout[-3000:] + done.stderr[-3000:]

    # Step 4: the rule, under datasets:, then the build the tour says exits 3.
    rule = re.search(r"```yaml\n(.*?)```", text[text.index("**4.") :], re.S).group(1)  # type: ignore[union-attr]
    datasets = root / "metadata" / "datasets.yaml"
    original = datasets.read_text()
    datasets.write_text(original.replace("datasets:\n", "datasets:\n" + rule, 1))
    done = medallion(root, env, "medallion build gold.orders_per_country")
    assert done.returncode == 3, done.stdout[-3000:] + done.stderr[-3000:]

    # Step 5: the fix the tour gives (min: 1), and the history.
    datasets.write_text(
        original.replace("datasets:\n", "datasets:\n" + rule.replace("min: 1000000", "min: 1"), 1)
    )
    done = medallion(root, env, "medallion build gold.orders_per_country")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = medallion(root, env, "medallion table history gold.orders_per_country")
    assert done.returncode == 0 and done.stdout.strip(), done.stderr

    # Step 6: the backfill preview, as written.
    preview = re.search(r"\n(medallion backfill [^\n]+--preview)\n", text).group(1)  # type: ignore[union-attr]
    done = medallion(root, env, preview)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
