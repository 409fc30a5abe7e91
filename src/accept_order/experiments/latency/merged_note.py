"""What a merged latency result's report says of its parts: which files it adds, and that its per-worker rows add
the same worker index of every file while their pids (and the port, the affinity lines) are the first file's, or,
for a server known by its replies, the same pid's (or, where the replies named their worker's index, that index's).

Without it a merge of two sessions read as one run: 'worker 0, pid 12627, served 2452' where pid 12627 served 916
and another process, worker 0 of the second session, the other 1536 (results/merge.py keeps the first file's pid).
"""

from __future__ import annotations

from rich.text import Text

from ...core.protocol import ROWS_BY_INDEX
from ...render.text import plural
from ...servers.registry import known_by_replies
from .result import LatencyResult


def merged_note(result: LatencyResult) -> Text | None:
    """None for one run's own result (or a file merged from fewer than two)."""
    merged = result.evidence.get("merged_from")
    if not isinstance(merged, dict) or not isinstance(files := merged.get("files"), list) or len(files) < 2:
        return None
    # each file's title, where the files' differ (results/merge_titles.py): the histogram's heading joins them
    names = ", ".join(f"{f.get('file')}{_titled(f)}" for f in files if isinstance(f, dict))
    when = "measured at once" if merged.get("concurrent") else "measured one after the other"
    # a server known by its replies has its rows matched by the pids they name, unless every file's rows are the
    # worker indices the replies named (results/merge_rows.py)
    if known_by_replies(result.server) and result.evidence.get("rows_by") != ROWS_BY_INDEX:
        rows = "each worker's row adds the figures of the pid it names from every file; the port is the first file's"
    elif known_by_replies(result.server):
        rows = (
            "each worker's row adds the figures of the worker index the replies named from every file; the pids "
            "and the port are the first file's"
        )
    else:
        rows = (
            "each worker's row adds that worker index's figures from every file; the pids, the port and the "
            "affinity lines are the first file's"
        )
    return Text(f"Merged from {plural(len(files), 'file')} {when} ({names}): {rows}", style="dim")


def _titled(source: dict[str, object]) -> str:
    """ " ('why A')" for a merged file whose title merge kept apart, " (no title)" for one that had none beside
    others' (a file written by hand or another tool: '' read as a title); "" for one whose title every file shared."""
    title = source.get("title")
    if not isinstance(title, str):
        return ""
    return f" ({title!r})" if title else " (no title)"
