#!/usr/bin/env python3
# Checks every relative link of the repository's Markdown files: the file it names must
# exist, and a #anchor must be a heading of that file (GitHub's anchor rule: lower case,
# punctuation dropped, spaces as hyphens). Links inside code blocks and to URLs are skipped.
#
#   scripts/check_links.py [PATH...]    # PATHs (relative to the root) may be missing
#
# Exits 1 naming each broken link.
import os
import re
import subprocess
import sys

root = subprocess.check_output(['git', 'rev-parse', '--show-toplevel'], text=True).strip()
os.chdir(root)
files = subprocess.check_output(['git', 'ls-files', '--cached', '--others', '--exclude-standard', '*.md'],
                                text=True).split()
may_be_missing = {os.path.normpath(p) for p in sys.argv[1:]}


def anchors(path):
    out, fence = set(), False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'):
            fence = not fence
        m = None if fence else re.match(r'#+\s+(.*)', line)
        if m:
            out.add(re.sub(r'[^\w\- ]', '', m.group(1).strip().lower()).replace(' ', '-'))
    return out


bad = 0
for f in sorted(set(files)):
    if not os.path.exists(f):
        continue
    text = re.sub(r'```.*?```', '', open(f, encoding='utf-8').read(), flags=re.S)
    for link in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', link):
            continue
        path, _, anchor = link.partition('#')
        target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(target):
            if target not in may_be_missing:
                print(f'{f}: {link}: no such file')
                bad += 1
        elif anchor and target.endswith('.md') and anchor not in anchors(target):
            print(f'{f}: {link}: no heading "{anchor}" in {target}')
            bad += 1
print(f'{len(files)} Markdown files, {bad} broken links')
sys.exit(1 if bad else 0)
