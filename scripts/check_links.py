# Checks every relative Markdown link (and its #anchor) in the tracked .md files.
import re, subprocess, os, sys
root = subprocess.check_output(['git','rev-parse','--show-toplevel'], text=True).strip()
os.chdir(root)
files = subprocess.check_output(['git','ls-files','*.md'], text=True).split() + \
        [f for f in subprocess.check_output(['git','ls-files','-o','--exclude-standard','*.md'], text=True).split()]
allowed_missing = {'docs/pyg.md', 'docs/export.md'}
def anchors(path):
    out=set(); fence=False
    for line in open(path, encoding='utf-8'):
        if line.startswith('```'): fence = not fence
        if fence: continue
        m = re.match(r'#+\s+(.*)', line)
        if m:
            t = m.group(1).strip().lower()
            t = re.sub(r'[^\w\- ]', '', t).replace(' ', '-')
            out.add(t)
    return out
bad = 0
for f in files:
    text = open(f, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)
    for m in re.finditer(r'\]\(([^)\s]+)\)', text):
        link = m.group(1)
        if re.match(r'[a-z]+:', link): continue
        path, _, anchor = link.partition('#')
        target = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if target in allowed_missing: continue
        if not os.path.exists(target):
            print(f'{f}: {link}: no such file'); bad += 1; continue
        if anchor and target.endswith('.md') and anchor not in anchors(target):
            print(f'{f}: {link}: no such heading'); bad += 1
print(f'{len(files)} files checked, {bad} broken links')
sys.exit(1 if bad else 0)
