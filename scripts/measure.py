#!/usr/bin/env python3
"""Measures the crate's shape (issue 32): lines per top-level module,
functions over 80 lines, functions returning `Result<_, String>`, `pub`
against `pub(crate)`/`pub(super)`, and the imports between top-level
modules with the arrows that go against docs/ARCHITECTURE.md's layers and
the circles among modules.

Usage: python3 scripts/measure.py [SRC_DIR]   (default: src)

Comments and the contents of string and char literals are blanked before
anything is counted, so a `{` in a string or `crate::` in a comment does
not count. Code inside `#[cfg(test)]` modules is counted apart (the
import map leaves it out, as ARCHITECTURE.md does).
"""

import os
import re
import sys
from collections import defaultdict

LONG = 80

# docs/ARCHITECTURE.md's layers, top to bottom; a module may import its
# own layer and the ones below.
LAYERS = [
    ["main"],
    ["commands"],
    ["run", "plan", "config_check"],
    ["spec"],
    ["host"],
    ["site"],
    ["snapshot"],
    ["workload", "report", "changes", "metrics", "cli", "claims"],
    ["results"],
    ["sandbox"],
    ["clients", "fetch"],
    ["model", "render", "display", "network"],
    ["units", "images", "stats", "bounded"],
    ["progress", "error", "systool", "slurm", "lib"],
]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}


def blank(text):
    """The text with comments and literal contents replaced by spaces
    (newlines kept, so line numbers hold)."""
    out = []
    i, n = 0, len(text)

    def keep_newlines(s):
        return "".join("\n" if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_newlines(text[i:j]))
            i = j
        elif c in "rb" and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'(br|r)(#*)"', text[i:])
            if m:
                close = '"' + m.group(2)
                j = text.find(close, i + m.end())
                j = n if j < 0 else j + len(close)
                out.append(text[i : i + m.end()] + keep_newlines(text[i + m.end() : j - len(close)]) + close)
                i = j
            else:
                out.append(c)
                i += 1
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + keep_newlines(text[i + 1 : j]) + '"')
            i = j + 1
        elif c == "'":
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 2)
                if text[i + 2] == "'":  # '\''
                    j = text.find("'", i + 3)
                out.append("' '")
                out.append(" " * max(0, j - i - 2))
                i = j + 1
            elif i + 2 < n and text[i + 2] == "'":
                out.append("' '")
                i += 3
            else:  # a lifetime
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(code, open_at):
    """Index of the brace closing the one at open_at."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def test_ranges(code):
    """Character ranges of `#[cfg(test)]` modules."""
    ranges = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", code):
        start = m.end() - 1
        ranges.append((m.start(), matching(code, start)))
    return ranges


def in_ranges(pos, ranges):
    return any(a <= pos <= b for a, b in ranges)


def line_of(code, pos):
    return code.count("\n", 0, pos) + 1


def functions(code):
    """(name, first line, line count, start offset) of every fn with a body."""
    found = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        # The body opens at the first `{` before any `;` (a declaration
        # without a body ends at `;`), skipping the generics' and the
        # parameters' brackets.
        j, depth = m.end(), 0
        while j < len(code):
            ch = code[j]
            if ch in "(<[":
                depth += 1
            elif ch in ")>]":
                depth -= 1 if not (ch == ">" and code[j - 1] == "-") else 0
            elif ch == ";" and depth <= 0:
                j = -1
                break
            elif ch == "{" and depth <= 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        end = matching(code, j)
        first, last = line_of(code, m.start()), line_of(code, end)
        found.append((m.group(1), first, last - first + 1, m.start()))
    return found


def string_errors(code):
    """Offsets of `Result<_, String>` (the error type is `String`)."""
    hits = []
    for m in re.finditer(r"\bResult<", code):
        depth, j, args, cur = 1, m.end(), [], []
        while j < len(code) and depth:
            ch = code[j]
            if ch in "<([":
                depth += 1
            elif ch in ">)]" and not (ch == ">" and code[j - 1] == "-"):
                depth -= 1
            if depth == 1 and ch == ",":
                args.append("".join(cur))
                cur = []
            elif depth:
                cur.append(ch)
            j += 1
        args.append("".join(cur))
        if len(args) == 2 and args[1].strip() == "String":
            hits.append(m.start())
    return hits


def module_of(rel):
    """The top-level module a file under src/ belongs to."""
    first = rel.split(os.sep)[0]
    return first[:-3] if first.endswith(".rs") else first


def imports(code, tests, crate_word):
    """Top-level modules named through `crate::` (or `benchcage::` in the
    binary), outside test modules."""
    names = []
    for m in re.finditer(r"\b" + crate_word + r"::(\{|\w+)", code):
        if in_ranges(m.start(), tests):
            continue
        if m.group(1) != "{":
            names.append(m.group(1))
            continue
        # `use crate::{a::X, b}`: each top-level name inside the braces.
        end = matching(code, m.end() - 1)
        inner, depth, start = code[m.end() : end], 0, 0
        parts = []
        for k, ch in enumerate(inner):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(inner[start:k])
                start = k + 1
        parts.append(inner[start:])
        for p in parts:
            w = re.match(r"\s*(\w+)", p)
            if w:
                names.append(w.group(1))
    return names


def sccs(graph):
    """Strongly connected components with more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "src"
    lines = defaultdict(int)
    long_fns, long_test_fns = [], []
    str_err, str_err_test = [], []
    pub_open = pub_restricted = pub_open_test = 0
    arrows = defaultdict(lambda: defaultdict(set))  # from -> to -> files
    modules = set()

    for root, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            rel = os.path.relpath(path, src)
            mod = module_of(rel)
            modules.add(mod)
            text = open(path, encoding="utf-8").read()
            lines[mod] += text.count("\n")
            code = blank(text)
            tests = test_ranges(code)
            for name, first, count, at in functions(code):
                if count > LONG:
                    (long_test_fns if in_ranges(at, tests) else long_fns).append((count, f"{rel}:{first}", name))
            for at in string_errors(code):
                (str_err_test if in_ranges(at, tests) else str_err).append(f"{rel}:{line_of(code, at)}")
            for m in re.finditer(r"\bpub\b(\s*\()?", code):
                if in_ranges(m.start(), tests):
                    pub_open_test += 1 if not m.group(1) else 0
                elif m.group(1):
                    pub_restricted += 1
                else:
                    pub_open += 1
            word = "benchcage" if rel == "main.rs" else "crate"
            for target in imports(code, tests, word):
                if target != mod:
                    arrows[mod][target].add(rel)

    print(f"== lines per top-level module (src/<m>, all lines) ==")
    for mod in sorted(lines, key=lambda m: -lines[m]):
        print(f"{lines[mod]:7d}  {mod}")
    print(f"{sum(lines.values()):7d}  total")

    print(f"\n== functions over {LONG} lines (outside test modules): {len(long_fns)} ==")
    for count, where, name in sorted(long_fns, reverse=True):
        print(f"{count:5d}  {name}  {where}")
    print(f"   (inside test modules: {len(long_test_fns)})")

    print(f"\n== Result<_, String> outside test modules: {len(str_err)} ==")
    for where in str_err:
        print(f"  {where}")
    print(f"   (inside test modules: {len(str_err_test)})")

    print(f"\n== visibility outside test modules ==")
    print(f"  pub: {pub_open}   pub(crate)/pub(super)/pub(in ..): {pub_restricted}")

    for src_mod in list(arrows):
        for dst in list(arrows[src_mod]):
            if dst not in modules:
                del arrows[src_mod][dst]
    print(f"\n== imports between top-level modules (outside test modules) ==")
    print("  from -> to  [files]   (UP: against ARCHITECTURE.md's layers)")
    ups = []
    for src_mod in sorted(arrows):
        for dst in sorted(arrows[src_mod]):
            files = sorted(arrows[src_mod][dst])
            up = src_mod in RANK and dst in RANK and RANK[dst] < RANK[src_mod]
            if up:
                ups.append((src_mod, dst, files))
            mark = "UP " if up else "   "
            shown = ", ".join(files[:3]) + (f" +{len(files) - 3}" if len(files) > 3 else "")
            print(f"  {mark}{src_mod} -> {dst}  [{shown}]")
    unknown = sorted(m for m in modules if m not in RANK)
    if unknown:
        print(f"  modules without a layer in this script: {', '.join(unknown)}")
    print(f"\n== upward arrows: {len(ups)} ==")
    for s, d, files in ups:
        print(f"  {s} -> {d}  [{', '.join(files)}]")
    graph = {s: set(d) for s, d in arrows.items()}
    circles = sccs(graph)
    print(f"\n== circles among top-level modules: {len(circles)} ==")
    for comp in circles:
        print("  " + " <-> ".join(comp))


if __name__ == "__main__":
    main()
