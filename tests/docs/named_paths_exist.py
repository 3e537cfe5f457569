#!/usr/bin/env python3
"""Every repository path named in docs/, the READMEs and source comments exists.

    named_paths_exist.py REPO_ROOT

A path is a word that starts with one of the top-level folders (cli/ included) and names a
file or folder under it (`profiler/store/run_writer.cpp`, `tests/fuzz/`).
Paths under build folders, globs and placeholders (<name>, ...) are skipped.
"""
import os
import re
import subprocess
import sys

TOP = ("common", "profiler", "advisor", "gui", "cli", "samples", "tests", "bench", "docs", "scripts", "cmake")
PATH = re.compile(r"(?<![\w./-])((?:%s)/[A-Za-z0-9_./+-]*)" % "|".join(TOP))
TEXT = (".md", ".cpp", ".h", ".py", ".txt", ".cmake", ".sh")
# A bare file name in backticks in the docs (`cuda_backend.cpp`) must be some
# file's name in the repository.
BARE = re.compile(r"`([A-Za-z0-9_-]+\.(?:cpp|h|py|md|sh))`")


def named_paths(text):
    for m in PATH.finditer(text):
        p = m.group(1).rstrip(".,:;)")
        if text[m.end():m.end() + 1] == "*":  # a glob such as `advisor/scale/what_if.*`
            continue
        if "*" in p or "<" in p or "..." in p or p.endswith("/."):
            continue
        yield p


def main():
    root = sys.argv[1]
    files = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    names = {os.path.basename(f) for f in files}
    missing = []
    for rel in files:
        if not rel.endswith(TEXT) and os.path.basename(rel) not in ("Makefile",):
            continue
        if rel.startswith("tests/fuzz/corpus/"):
            continue
        with open(os.path.join(root, rel), errors="replace") as f:
            for n, line in enumerate(f, 1):
                for p in named_paths(line):
                    if not os.path.exists(os.path.join(root, p)):
                        missing.append(f"{rel}:{n}: {p}")
                if rel.endswith(".md"):
                    for b in BARE.findall(line):
                        if b not in names:
                            missing.append(f"{rel}:{n}: {b}")
    for m in missing:
        print("names a path that does not exist:", m)
    print(f"{len(missing)} missing path(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
