#!/usr/bin/env python3
"""Exclusive (self) instruction counts from a callgrind dump that scripts/cost.sh kept
(COST_KEEP): per function, per source line, or the difference per function between two dumps.

callgrind_annotate's inclusive view reads these dumps well, but its exclusive view puts nearly
everything on the thread's entry (`clone`), so this reads the format itself: every cost line
belongs to the function of the `fn=` above it and to the source file of the nearest `fl=`,
`fi=` or `fe=` (inlined code keeps its own file and line), and the line after `calls=` is the
callee's inclusive cost, which is not the caller's own.

  scripts/cg-self.py fn   DUMP [PATTERN] [--per N] [--top K]   own cost per function
  scripts/cg-self.py line DUMP [PATTERN] [--per N] [--top K]   own cost per source line
  scripts/cg-self.py diff DUMP_A DUMP_B [--per N] [--top K]    B - A per function
  scripts/cg-self.py callers DUMP PATTERN [--per N] [--top K]  who calls the functions whose
                                                               name contains PATTERN, and what
                                                               those calls cost (inclusive)
  scripts/cg-self.py asm DUMP FUNCTION [--bin B] [--per N]     own cost per instruction of the
                                                               function whose name ends with
                                                               FUNCTION, beside objdump's
                                                               disassembly of B (default
                                                               target/release/obkv-proxy); the
                                                               dump made with
                                                               COST_VALGRIND_ARGS=--dump-instr=yes

PATTERN keeps functions (fn, line) or files (line) whose name contains it; --per divides the
counts (the queries counted, 2000 by default in cost.sh).
"""
import argparse
import collections
import re
import sys

ID = re.compile(r"\((\d+)\)(?:\s+(.*))?")


def read(path):
    """(own cost per function, own cost per (file, line, function), inclusive cost per
    (caller, callee), own cost per (function, instruction address): only in a dump made with
    --dump-instr=yes)."""
    names = {"fn": {}, "fl": {}}

    def name(space, value):
        m = ID.match(value)
        if not m:
            return value
        key, text = m.group(1), m.group(2)
        if text:
            names[space][key] = text
        return names[space].get(key, "?" + key)

    per_fn = collections.Counter()
    per_line = collections.Counter()
    per_addr = collections.Counter()
    calls = collections.Counter()
    callee = None
    fn = fl = here = None
    line = 0
    callee_cost_next = False
    # a dump made with --dump-instr=yes has an address before the line on each cost line
    lead = 0
    addr = 0
    with open(path, errors="replace") as f:
        for raw in f:
            s = raw.rstrip("\n")
            if not s:
                continue
            if s.startswith("positions:"):
                lead = 1 if "instr" in s.split() else 0
                continue
            c = s[0]
            if c.isdigit() or c in "+-*":
                fields = s.split()
                if lead:
                    a = fields[0]
                    if a.startswith("0x"):
                        addr = int(a, 16)
                    elif a.startswith("+"):
                        addr += int(a[1:])
                    elif a.startswith("-"):
                        addr -= int(a[1:])
                    fields = fields[1:]
                pos = fields[0]
                if pos.startswith("+"):
                    line += int(pos[1:])
                elif pos.startswith("-"):
                    line -= int(pos[1:])
                elif pos != "*":
                    line = int(pos)
                if callee_cost_next:
                    callee_cost_next = False
                    calls[(fn, callee)] += int(fields[1]) if len(fields) > 1 else 0
                    continue
                cost = int(fields[1]) if len(fields) > 1 else 0
                per_fn[fn] += cost
                per_line[(here, line, fn)] += cost
                if lead:
                    per_addr[(fn, addr)] += cost
                continue
            key, _, value = s.partition("=")
            if key == "fn":
                fn = name("fn", value)
                here = fl
            elif key == "fl":
                fl = here = name("fl", value)
            elif key in ("fi", "fe"):
                here = name("fl", value)
            elif key == "cfn":
                callee = name("fn", value)
            elif key in ("cfl", "cfi"):
                name("fl", value)
            elif key == "calls":
                callee_cost_next = True
    return per_fn, per_line, calls, per_addr


def asm(per_addr, function, binary, per):
    """Own cost per instruction address of the function whose name ends with `function`,
    printed beside its disassembly (the dump's addresses are the running process's: the
    lowest one the function ran is taken for its symbol's start)."""
    import subprocess

    cost = collections.Counter()
    for (fn, addr), v in per_addr.items():
        if fn and fn.endswith(function):
            cost[addr] += v
    if not cost:
        sys.exit(f"no cost of a function ending with {function} (a dump made with --dump-instr=yes?)")
    lo, hi = min(cost), max(cost)
    symbols = subprocess.run(
        ["nm", "-C", "-S", "--defined-only", binary], capture_output=True, text=True
    ).stdout
    found = None
    for entry in symbols.splitlines():
        p = entry.split(None, 3)
        if len(p) == 4 and p[3].endswith(function):
            start, size = int(p[0], 16), int(p[1], 16)
            if hi - (lo - start) < start + size:
                found = (start, size, p[3], lo - start)
                break
    if not found:
        sys.exit(f"no symbol ending with {function} in {binary} covers the costs")
    start, size, symbol, base = found
    print(f"# {symbol} at {start:#x}, {size} bytes, own cost {sum(cost.values()) / per:.1f}")
    dis = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-C",
         f"--start-address={start:#x}", f"--stop-address={start + size:#x}", binary],
        capture_output=True, text=True,
    ).stdout
    for entry in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s*(.*)", entry)
        if m:
            v = cost.get(int(m.group(1), 16) + base, 0)
            shown = f"{v / per:8.1f}" if v else " " * 8
            print(f"{shown}  {m.group(1)}: {m.group(2)}")


def short(path):
    return (path or "?").rsplit("/", 1)[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["fn", "line", "diff", "callers", "asm"])
    ap.add_argument("dump")
    ap.add_argument("other", nargs="?", default="")
    ap.add_argument("--per", type=float, default=1.0)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--bin", default="target/release/obkv-proxy")
    a = ap.parse_args()
    per_fn, per_line, calls, per_addr = read(a.dump)
    if a.mode == "asm":
        asm(per_addr, a.other, a.bin, a.per)
        return
    total = sum(per_fn.values())
    if a.mode == "diff":
        if not a.other:
            sys.exit("diff needs two dumps")
        other, _, _, _ = read(a.other)
        keys = sorted(set(per_fn) | set(other), key=lambda k: -abs(other[k] - per_fn[k]))
        print(f"{'B-A':>10} {'A':>10} {'B':>10}  function")
        for k in keys[: a.top]:
            print(
                f"{(other[k] - per_fn[k]) / a.per:>10.1f} {per_fn[k] / a.per:>10.1f} "
                f"{other[k] / a.per:>10.1f}  {k}"
            )
        print(f"total {total / a.per:.1f} -> {sum(other.values()) / a.per:.1f}")
        return
    pattern = a.other
    shown = 0
    if a.mode == "callers":
        found = collections.Counter()
        for (caller, callee), v in calls.items():
            if pattern in (callee or ""):
                found[caller] += v
        for k, v in found.most_common(a.top):
            print(f"{v / a.per:>12.1f}  {k}")
        print(f"total {total / a.per:.1f}")
        return
    if a.mode == "fn":
        for k, v in per_fn.most_common():
            if pattern in (k or "") and shown < a.top:
                print(f"{v / a.per:>12.1f} {100 * v / total:6.2f}%  {k}")
                shown += 1
    else:
        for (path, line, fn), v in per_line.most_common():
            if (pattern in (path or "") or pattern in (fn or "")) and shown < a.top:
                print(f"{v / a.per:>12.1f}  {short(path)}:{line}  {fn}")
                shown += 1
    print(f"total {total / a.per:.1f}")


if __name__ == "__main__":
    main()
