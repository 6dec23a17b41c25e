#!/usr/bin/env python3
"""Checks that every relative link of the repository's Markdown resolves:
the file or folder it names exists, and its #anchor is a heading of that
file, spelt as GitHub spells heading anchors. Links to other sites are not
followed. A path quoted in code (`go/capi/spanpath.c`, `tools/ci/`,
`go/export/...`, `cuda/src/pool.cc:112`) whose first folder is one at the
top of the repository must name a file or folder too, from the top or
from the Markdown file's folder; CHANGELOG.md is history, and keeps the
names things had. Prints each broken link or path as file:line: link:
why, and exits 1 if there is one.

    tools/ci/links.py              # the tracked *.md files (git ls-files)
    tools/ci/links.py FILE...      # those files
    tools/ci/links.py --self-test  # proves it finds what it must
"""

import os
import re
import subprocess
import sys
import tempfile

LINK = re.compile(r"(?<!\\)\[(?:[^\]\\]|\\.)*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# A quoted path: folders and a file or folder, no spaces, globs or
# placeholders; a trailing :line or :from-to is dropped, /... is the folder.
QUOTED_PATH = re.compile(r"^(?:\./)?([A-Za-z0-9_.-]+)/[\w./@+-]*?(?:/\.\.\.)?$")
HISTORY = {"CHANGELOG.md"}


def lines_outside_code(text):
    """(line number, line) for the lines outside fenced code blocks."""
    fenced = False
    for n, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def anchor(heading):
    """GitHub's anchor of a heading's text: lower case, markup and
    punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.replace("`", "").replace("*", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for _, line in lines_outside_code(text):
        m = HEADING.match(line)
        if not m:
            continue
        a = anchor(m.group(2))
        n = seen.get(a, 0)
        seen[a] = n + 1
        out.add(a if n == 0 else f"{a}-{n}")
    return out


def tops(root):
    """The folders at the top of the repository that git tracks files in: a
    quoted path must start with one of them to be checked (an ignored
    folder, such as the GPU machine's .carry/, is not the repository's)."""
    try:
        files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return {e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e)) and e != ".git"}
    return {f.split("/", 1)[0] for f in files if "/" in f}


def quoted_paths(line, top):
    """The repository paths quoted in code spans of line, as written and as
    a path to test."""
    for m in CODE_SPAN.finditer(line):
        quoted = m.group(2).strip()
        path = re.sub(r":\d+(?:-\d+)?$", "", quoted)
        pm = QUOTED_PATH.match(path)
        if not pm or pm.group(1) not in top:
            continue
        if path.endswith("/..."):
            path = path[: -len("/...")]
        yield quoted, path


def check(files, root):
    broken = []
    cache = {}
    top = tops(root)
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text = fh.read()
        for n, line in lines_outside_code(text):
            if os.path.basename(f) not in HISTORY:
                for quoted, path in quoted_paths(line, top):
                    here = os.path.join(os.path.dirname(f), path)
                    if not os.path.exists(os.path.join(root, path)) and not os.path.exists(here):
                        broken.append(f"{f}:{n}: `{quoted}`: no such file or folder")
            line = CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)  # a link in code is text
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                    continue  # another site, or mailto:
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
                if not os.path.abspath(dest).startswith(os.path.abspath(root)):
                    broken.append(f"{f}:{n}: {target}: outside the repository")
                    continue
                if not os.path.exists(dest):
                    broken.append(f"{f}:{n}: {target}: {dest} does not exist")
                    continue
                if frag:
                    if not dest.endswith(".md") or os.path.isdir(dest):
                        broken.append(f"{f}:{n}: {target}: an anchor into something not Markdown")
                        continue
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        broken.append(f"{f}:{n}: {target}: no heading #{frag} in {dest}")
    return broken


def self_test():
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "docs"))
        with open(os.path.join(d, "docs", "a.md"), "w") as f:
            f.write("# A guide\n\n## What it costs\n\n## What it costs\n\n```\n## not a heading\n[x](gone.md)\n```\n")
        good = os.path.join(d, "good.md")
        with open(good, "w") as f:
            f.write("# Top\n\n[a](docs/a.md) [b](docs/a.md#what-it-costs) [c](docs/a.md#what-it-costs-1) "
                    "[d](#top) [e](https://example.invalid/x) [f](docs) `[g](nowhere.md)`\n"
                    "`docs/a.md` `docs/a.md:3` `docs/` `docs/...` `a.md` `notatop/x.go` `docs/*.md` "
                    "`//docs:x` `/metrics` `docs/$X`\n\n```\ndocs/gone.md\n```\n")
        with open(os.path.join(d, "docs", "rel.md"), "w") as f:
            f.write("`docs/a.md`, and from here `a.md`\n")
        with open(os.path.join(d, "CHANGELOG.md"), "w") as f:
            f.write("- moved `docs/old.md` away\n")
        bad = os.path.join(d, "bad.md")
        with open(bad, "w") as f:
            f.write("[a](docs/b.md)\n[b](docs/a.md#not-a-heading)\n[c](#nowhere)\n[d](../../etc/passwd)\n"
                    "[e](docs/a.md#not-a-heading-1)\n"
                    "see `docs/gone.md` and `docs/a.md:12` and `docs/gone/...`\n")
        fine = [good, os.path.join(d, "docs", "a.md"), os.path.join(d, "docs", "rel.md"), os.path.join(d, "CHANGELOG.md")]
        assert check(fine, d) == [], check(fine, d)
        got = check([bad], d)
        assert len(got) == 7, got
        assert sum("no such file or folder" in g for g in got) == 2, got
    print("links: self-test passed")


def main(argv):
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    os.chdir(root)
    files = argv[1:] or [f for f in subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True,
                                                   check=True).stdout.split() if not f.startswith("third_party/")]
    broken = check(files, root)
    for b in broken:
        print(b)
    print(f"links: {len(files)} files, {len(broken)} broken links")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
