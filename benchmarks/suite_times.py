"""The suite's time per tier and its slowest modules, for docs/testing.md: read from the JUnit XML
of one run (`PYTEST_ADDOPTS=--junitxml=FILE make test`, or CI's). Times are pytest's per test,
summed over both workers, setup and teardown included. Prints Markdown.

    python benchmarks/suite_times.py FILE [--slowest 15]
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path


def read(junit: Path) -> dict[str, tuple[int, float]]:
    """Each test module (tests/<tier>/<file>.py) with its number of tests and seconds."""
    modules: dict[str, list[float]] = defaultdict(list)
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        name = "/".join(module[:3]) + ".py" if len(module) >= 3 else ".".join(module)
        modules[name].append(float(case.get("time", 0)))
    return {name: (len(times), sum(times)) for name, times in modules.items()}


def tables(modules: dict[str, tuple[int, float]], slowest: int) -> str:
    counts: dict[str, int] = defaultdict(int)
    times: dict[str, float] = defaultdict(float)
    for name, (count, seconds) in modules.items():
        tier = "/".join(name.split("/")[:2])
        counts[tier] += count
        times[tier] += seconds
    total = sum(times.values())
    lines = ["| directory | tests | seconds | share |", "|---|---:|---:|---:|"]
    for tier in sorted(times, key=lambda tier: -times[tier]):
        lines.append(f"| {tier} | {counts[tier]} | {times[tier]:.0f} | {times[tier] / total:.1%} |")
    count = sum(counts.values())
    lines += [f"| all (two workers) | {count} | {total:.0f} | |", ""]
    lines += ["| module | tests | seconds |", "|---|---:|---:|"]
    by_time = sorted(modules.items(), key=lambda item: -item[1][1])[:slowest]
    lines += [f"| {name} | {count} | {seconds:.0f} |" for name, (count, seconds) in by_time]
    return "\n".join(lines)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("junit", type=Path)
    options.add_argument("--slowest", type=int, default=15)
    args = options.parse_args()
    print(tables(read(args.junit), args.slowest))


if __name__ == "__main__":
    main()
