#!/usr/bin/env python3
"""The pub(crate) sweep of issue 32, mechanical so that it can be redone
after a merge: `pub` -> `pub(crate)` on every item (fn, struct, enum,
trait, type, const, static; not modules, fields or `pub use`) whose name
appears nowhere outside the crate (src/main.rs, tests/, benches/,
examples/, the exported `with_store!` macro) and that no `pub use`
re-exports; then `cargo check --all-targets` rounds put back `pub` on
each line the compiler points at (an item now dead, a private type in a
public interface, a use from outside).

    python3 scripts/pub_sweep.py sweep   # rewrite
    python3 scripts/pub_sweep.py         # check rounds, reverting

What the rounds cannot see: a `pub` method never used inside the crate
of a type now `pub(crate)` (dead code reported on the method, the type
must stay `pub`): put `pub` back on the type by hand. Files other work
is changing can be left out with `git checkout -- FILE` before checking.
Then `cargo clippy --all-targets -- -D warnings` and `cargo fmt`."""
import json, os, re, subprocess, sys

ROOT = os.getcwd()
ITEM = re.compile(r"^(\s*)pub ((?:async |unsafe |const )*(?:fn|struct|enum|trait|type|const|static) +(\w+))")

def words_outside():
    words = set()
    paths = ["src/main.rs"]
    for d in ["tests", "benches", "examples"]:
        for r, _, fs in os.walk(d):
            paths += [os.path.join(r, f) for f in fs if f.endswith(".rs")]
    for p in paths:
        words |= set(re.findall(r"\w+", open(p).read()))
    # The exported macro's body names items by path from other crates.
    m = open("src/workload/stores/mod.rs").read()
    a = m.index("#[macro_export]")
    words |= set(re.findall(r"\w+", m[a:a + 4000]))
    # Items re-exported with `pub use` stay pub (a re-export cannot be
    # wider than its item).
    for r, _, fs in os.walk("src"):
        for f in fs:
            if f.endswith(".rs"):
                text = open(os.path.join(r, f)).read()
                for m in re.finditer(r"pub use [^;]*;", text):
                    words |= set(re.findall(r"\w+", m.group(0)))
    return words

def sweep():
    outside = words_outside()
    changed = 0
    for r, _, fs in os.walk("src"):
        for f in fs:
            if not f.endswith(".rs") or (r == "src" and f in ("main.rs", "lib.rs")):
                continue
            p = os.path.join(r, f)
            lines = open(p).read().split("\n")
            for i, l in enumerate(lines):
                m = ITEM.match(l)
                if m and m.group(3) not in outside:
                    lines[i] = f"{m.group(1)}pub(crate) {m.group(2)}" + l[m.end():]
                    changed += 1
            open(p, "w").write("\n".join(lines))
    print("swept", changed)

def revert(path, line):
    p = os.path.join(ROOT, path)
    lines = open(p).read().split("\n")
    l = lines[line - 1]
    if "pub(crate) " in l:
        lines[line - 1] = l.replace("pub(crate) ", "pub ", 1)
        open(p, "w").write("\n".join(lines))
        return True
    return False

def check():
    out = subprocess.run(["cargo", "check", "--all-targets", "--message-format=json"],
                         capture_output=True, text=True).stdout
    reverted, other = 0, []
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-message":
            continue
        d = msg["message"]
        if d["level"] not in ("warning", "error"):
            continue
        spans = [s for s in d["spans"]] + [s for c in d.get("children", []) for s in c["spans"]]
        done = False
        for s in spans:
            if s["file_name"].startswith("src/") and revert(s["file_name"], s["line_start"]):
                reverted += 1
                done = True
        # An item named from outside through a path: find its definition.
        if not done:
            other.append(d["rendered"][:400])
    return reverted, other

if __name__ == "__main__":
    if sys.argv[1:] == ["sweep"]:
        sweep()
    else:
        for round in range(6):
            n, other = check()
            print("round", round, "reverted", n, "other", len(other))
            if n == 0:
                for o in other[:20]:
                    print(o)
                break
