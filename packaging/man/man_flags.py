#!/usr/bin/env python3
"""Fills a manual page template with the flags the binaries themselves list.

Every line "@FLAGS <argv...>@" of TEMPLATE becomes the roff list of the
flags that `<argv...> --help` prints, so the pages and --help come from one
source: the flag definitions in the code. Two layouts are read: the C++
binaries' "flags:" block ("  --name[=default]" lines, each followed by its
indented description) and Python argparse's "options:" block ("  --name META
description", the description maybe on the indented lines below).

Usage: man_flags.py TEMPLATE OUT NAME=PATH...
<argv> is a program's NAME, then its arguments; NAME=PATH says where it is.
"""

import re
import subprocess
import sys

PLACEHOLDER = re.compile(r"^@FLAGS (.+)@$")
BLOCKS = ("flags:", "options:", "optional arguments:")
FLAG = re.compile(r"^  (?:-\w, )?(--[a-z0-9_-]+)(?:=(\S*)| [A-Z_]+)?(?:\s{2,}(\S.*))?$")


def roff(text):
    return text.replace("\\", "\\e").replace("-", "\\-")


def flags_of(argv):
    run = subprocess.run(argv + ["--help"], capture_output=True, text=True, timeout=30)
    if run.returncode != 0:
        sys.exit(f"man_flags.py: {' '.join(argv)} --help exited {run.returncode}: {run.stderr}")
    out, inside, current = [], False, None
    for line in run.stdout.splitlines():
        if line in BLOCKS:
            inside = True
            continue
        if not inside:
            continue
        m = FLAG.match(line)
        if m:
            current = [m.group(1), m.group(2), [m.group(3)] if m.group(3) else []]
            if current[0] != "--help":
                out.append(current)
        elif line.startswith("      ") and current:
            current[2].append(line.strip())
        elif line and not line.startswith(" "):
            break  # the next block (exit codes, ...)
    if not out:
        sys.exit(f"man_flags.py: {' '.join(argv)} --help lists no flags")
    lines = []
    for name, default, description in out:
        lines.append(".TP")
        head = f"\\fB{roff(name)}\\fR"
        if default not in (None, ""):
            head += f" (default {roff(default)})"
        lines.append(head)
        lines.append(roff(" ".join(description)))
    return lines


def main(template, out, *programs):
    path_of = dict(p.split("=", 1) for p in programs)
    result = []
    with open(template) as f:
        for line in f.read().splitlines():
            m = PLACEHOLDER.match(line)
            if not m:
                result.append(line)
                continue
            argv = m.group(1).split()
            if argv[0] not in path_of:
                sys.exit(f"man_flags.py: {template}: no path given for {argv[0]}")
            result += flags_of([path_of[argv[0]]] + argv[1:])
    with open(out, "w") as f:
        f.write("\n".join(result) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
