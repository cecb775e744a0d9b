#!/usr/bin/env python3
"""data.py: builds the training text of the default model from what Debian installs.

It owns the choice of sources, the text extraction (plain files, gzip files, man pages
stripped of roff), the deduplication and the held-out split. It uses the standard library
only, so it runs on the development machine, where the files are; the GPU machine reaches
nothing and gets the result carried to it compressed (never committed).

Sources (aiming at code: the users are coding agents):
  code   CPython's standard library, /usr/lib/python3.11/**/*.py, and the Python packages
         Debian installs, /usr/lib/python3/dist-packages/**/*.py
  prose  English man pages (man1, man5, man7, man8; roff stripped to text) and the text
         files of /usr/share/doc (README, NEWS, *.txt, *.md, *.rst; gzip or plain)

Split: a document is held out when the first 8 hex digits of sha256("<kind>:<path>") modulo
100 fall below HELDOUT_PCT; the rest is training text. Documents are deduplicated by content
hash (the first path in sorted order keeps it) and written in the order of that same path
hash, so code and prose interleave. Each output is a UTF-8 stream of documents separated by
NUL bytes, xz-compressed: OUT/train.txt.xz and OUT/heldout.txt.xz, plus OUT/manifest.json
(counts, bytes, a sha256 of each stream).

usage: nice python3 tools/train/data.py [--out train-data]
"""
import argparse
import gzip
import hashlib
import json
import lzma
import os
import re
import sys

HELDOUT_PCT = 2
MAX_DOC = 200_000          # bytes; longer files are cut at a line boundary
CODE_ROOTS = ["/usr/lib/python3.11", "/usr/lib/python3/dist-packages"]
MAN_ROOT = "/usr/share/man"
MAN_SECTIONS = ["man1", "man5", "man7", "man8"]
MAN_SKIP = re.compile(r"^(gcloud|bq|gsutil)")          # thousands of near-identical pages
DOC_ROOT = "/usr/share/doc"
DOC_NAME = re.compile(r"(^(README|NEWS|FAQ|TODO|HACKING|CONTRIBUTING|USAGE|INSTALL)[^/]*$)|"
                      r"(\.(txt|md|rst)(\.gz)?$)", re.I)
DOC_SKIP = re.compile(r"(copyright|changelog|license|\.html)", re.I)


def read_bytes(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".gz"):
        data = gzip.decompress(data)
    return data


def as_text(data):
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.replace("\r\n", "\n")
    if len(text) > MAX_DOC:
        cut = text.rfind("\n", 0, MAX_DOC)
        text = text[: cut + 1 if cut > 0 else MAX_DOC]
    return text if text.strip() else None


# ---- roff to text ---------------------------------------------------------------------
NAMED = {"em": "--", "en": "-", "aq": "'", "dq": '"', "bu": "*", "co": "(c)", "rg": "(R)",
         "lq": '"', "rq": '"', "oq": "'", "cq": "'", "ha": "^", "ti": "~", "mi": "-",
         "pl": "+", "mu": "x", ">=": ">=", "<=": "<=", "->": "->", "<-": "<-", "rs": "\\",
         "ba": "|", "sl": "/", "hy": "-", "ga": "`", "at": "@", "sh": "#", "Do": "$", "lB": "[",
         "rB": "]", "lC": "{", "rC": "}", "ul": "_", "dg": "+", "de": "deg", "tm": "(TM)"}
ESC = re.compile(r"\\(f(\[[^\]]*\]|\(..|.)|s[+-]?\d+|s\[[^\]]*\]|\*(\[[^\]]*\]|\(..|.)|"
                 r"\((..)|\[([^\]]*)\]|n(\[[^\]]*\]|\(..|.)|[kgmhvwoxyzHNSXYZ]'[^']*'|.)")


def unescape(s):
    def rep(m):
        body = m.group(1)
        c = body[0]
        if c in "fs*n" and len(body) > 1 or c in "kgmhvwoxyzHNSXYZ" and len(body) > 1:
            return ""
        if body.startswith("("):
            return NAMED.get(m.group(4), "")
        if body.startswith("["):
            return NAMED.get(m.group(5), "")
        return {"-": "-", "e": "\\", "&": "", " ": " ", "|": "", "^": "", "c": "", "~": " ",
                "0": " ", "'": "'", "`": "`", ".": ".", "\\": "\\", "t": "\t", "%": "",
                '"': ""}.get(c, c)
    return ESC.sub(rep, s)


def macro_args(rest):
    out, cur, q = [], "", False
    for ch in rest:
        if ch == '"':
            q = not q
        elif ch in " \t" and not q:
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def roff_to_text(src):
    out = []
    for line in src.split("\n"):
        if line.startswith(('.\\"', "'\\\"", '.\\}', "\\\"")) or line.strip() in (".", "'"):
            continue
        if line.startswith((".", "'")):
            parts = line[1:].strip().split(None, 1)
            if not parts:
                continue
            mac, rest = parts[0], parts[1] if len(parts) > 1 else ""
            args = macro_args(rest)
            if mac in ("SH", "SS", "Sh", "Ss"):
                out.append("\n" + unescape(" ".join(args)).upper() if mac in ("SH", "Sh")
                           else "\n" + unescape(" ".join(args)))
            elif mac in ("B", "I", "SM", "SB"):
                out.append(unescape(" ".join(args)))
            elif mac in ("BR", "RB", "IR", "RI", "BI", "IB"):
                out.append(unescape("".join(args)))
            elif mac in ("PP", "LP", "P", "Pp", "sp", "TP", "HP"):
                out.append("")
            elif mac == "IP":
                out.append("")
                if args:
                    out.append(unescape(args[0]))
            elif mac == "TH":
                out.append(unescape(" ".join(args[:2])))
            elif mac in ("Nm", "Nd", "Ar", "Fl", "Cm", "Pa", "It", "Dl", "Op", "Xr", "Em"):
                out.append(unescape(" ".join(args)))
            continue
        out.append(unescape(line))
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


# ---- collection -----------------------------------------------------------------------
def walk(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in ("__pycache__", "site-packages", "dist-packages")
                             or dirpath == "/usr/lib/python3")
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


def collect():
    for root in CODE_ROOTS:
        for path in walk(root):
            if path.endswith(".py"):
                yield "code", path
    for sec in MAN_SECTIONS:
        for path in walk(os.path.join(MAN_ROOT, sec)):
            if not MAN_SKIP.match(os.path.basename(path)):
                yield "man", path
    for path in walk(DOC_ROOT):
        rel = path[len(DOC_ROOT) + 1:]
        if DOC_NAME.search(os.path.basename(rel)) and not DOC_SKIP.search(rel):
            yield "doc", path


def key(kind, path):
    return hashlib.sha256(f"{kind}:{path}".encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="train-data")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    docs, seen = [], set()
    stats = {}
    for kind, path in collect():
        try:
            text = as_text(read_bytes(path))
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        if text is None:
            continue
        if kind == "man":
            if text.lstrip().startswith(".so "):     # a link to another page
                continue
            text = roff_to_text(text)
            if len(text) < 200:
                continue
        h = hashlib.sha256(text.encode()).digest()
        if h in seen:
            continue
        seen.add(h)
        k = key(kind, path)
        split = "heldout" if int(k[:8], 16) % 100 < HELDOUT_PCT else "train"
        docs.append((k, split, kind, text))
        s = stats.setdefault(f"{split}.{kind}", [0, 0])
        s[0] += 1
        s[1] += len(text.encode())
    docs.sort()
    manifest = {"heldout_pct": HELDOUT_PCT, "docs_bytes": stats, "files": {}}
    for split in ("train", "heldout"):
        stream = "\0".join(d[3] for d in docs if d[1] == split).encode()
        name = f"{split}.txt.xz"
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(lzma.compress(stream, preset=6))
        manifest["files"][name] = {"bytes": len(stream), "sha256": hashlib.sha256(stream).hexdigest()}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    json.dump(manifest, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
