"""Chooses the inputs kept in fuzz/corpus/<target>: a greedy cover of the edges a campaign reached.

libFuzzer's ``-merge=1`` keeps every input that adds a feature, which after a long campaign is
thousands of files. This reads the merge control file (``-merge_control_file``, written with
``-use_counters=0 -use_cmp=0`` so that features are edges) and keeps, greedily, the input that
adds the most edges per kilobyte until no input adds one or the file or byte budget is spent.

Usage: python3 fuzz/keep.py CONTROL_FILE OUT_DIR [MAX_FILES] [MAX_BYTES]
"""

from __future__ import annotations

import hashlib
import heapq
import shutil
import sys
from pathlib import Path


def read_control(path: Path) -> dict[str, set[int]]:
    """The edges of each input that the merge ran, by input path."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    count = int(lines[0])
    paths = lines[2 : 2 + count]
    edges: dict[str, set[int]] = {}
    for line in lines[2 + count :]:
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "FT":
            edges[paths[int(fields[1])]] = {int(field) for field in fields[2:]}
    return edges


def choose(edges: dict[str, set[int]], max_files: int, max_bytes: int) -> list[str]:
    """A greedy cover: the most new edges per kilobyte first, ties to the smaller input.

    Lazy greedy: an input's gain only shrinks as edges are covered, so a gain recomputed at the
    top of the heap that still beats the next one is the best.
    """
    # An input removed since the merge (a campaign reduced it) cannot be kept.
    sizes = {path: Path(path).stat().st_size for path in edges if Path(path).is_file()}

    def score(path: str, covered: set[int]) -> float:
        return len(edges[path] - covered) / (1 + sizes[path] / 1024)

    heap = [(-score(path, set()), sizes[path], path) for path in sizes]
    heapq.heapify(heap)
    covered: set[int] = set()
    chosen: list[str] = []
    used_bytes = 0
    while heap and len(chosen) < max_files:
        _, size, path = heapq.heappop(heap)
        current = score(path, covered)
        if current <= 0:
            continue
        if heap and -heap[0][0] > current:
            heapq.heappush(heap, (-current, size, path))
            continue
        if used_bytes + size > max_bytes:
            continue
        covered |= edges[path]
        chosen.append(path)
        used_bytes += size
    return chosen


def main() -> None:
    """Copies the chosen inputs into OUT_DIR, named by their SHA-1 as libFuzzer names them."""
    control, out_dir = Path(sys.argv[1]), Path(sys.argv[2])
    max_files = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    max_bytes = int(sys.argv[4]) if len(sys.argv) > 4 else 800_000
    edges = read_control(control)
    chosen = choose(edges, max_files, max_bytes)
    all_edges = set().union(*edges.values()) if edges else set()
    kept_edges = set().union(*(edges[path] for path in chosen)) if chosen else set()
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in chosen:
        data = Path(path).read_bytes()
        shutil.copyfile(path, out_dir / hashlib.sha1(data).hexdigest())
    print(
        f"{out_dir}: {len(chosen)} of {len(edges)} inputs kept, "
        f"{sum(Path(p).stat().st_size for p in chosen)} bytes, "
        f"{len(kept_edges)} of {len(all_edges)} edges"
    )


if __name__ == "__main__":
    main()
