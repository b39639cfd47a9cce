#!/usr/bin/env python3
"""Summarizes several `unity-bench --json FILE` runs of the same cases.

    python3 Benchmarks/summarize-runs.py run1.json run2.json ...

For each backend/workload/subject it prints the median over the runs of the ratio to `raw`
(each run's ratio is its median time over raw's median time, measured in that run), the spread
(min–max of the ratios) and the median time. Benchmark targets are judged on this median of at
least 5 runs, with the spread beside it.
"""
import json
import statistics
import sys


def main(paths):
    if not paths:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cases = {}
    order = []
    for path in paths:
        with open(path) as handle:
            document = json.load(handle)
        for entry in document.get("results", []):
            key = (entry["backend"], entry["workload"], entry["subject"])
            if key not in cases:
                cases[key] = {"ratios": [], "seconds": [], "rows": entry["rows"]}
                order.append(key)
            cases[key]["seconds"].append(entry["median_seconds"])
            if entry.get("ratio_to_raw") is not None:
                cases[key]["ratios"].append(entry["ratio_to_raw"])
        for entry in document.get("failed", []):
            print(f"FAILED in {path}: {entry['backend']}/{entry['workload']}/{entry['subject']}: {entry['reason']}")
    print(f"{'backend':9} {'workload':14} {'subject':13} {'runs':>4} {'median time':>12} {'lookups/s':>10} "
          f"{'vs raw (median)':>15} {'spread':>13}")
    for key in order:
        case = cases[key]
        seconds = statistics.median(case["seconds"])
        ratios = case["ratios"]
        ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        spread = f"{min(ratios):.2f}–{max(ratios):.2f}x" if ratios else "-"
        print(f"{key[0]:9} {key[1]:14} {key[2]:13} {len(case['seconds']):>4} {seconds * 1000:>9.1f} ms "
              f"{case['rows'] / seconds:>10,.0f} {ratio:>15} {spread:>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
