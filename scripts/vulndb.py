#!/usr/bin/env python3
"""Builds a Go vulnerability database that govulncheck reads with
-db file:///DIR from the OSV entries of the golang.org/x/vulndb module
(SRC/data/osv/*.json, fetched through the Go module proxy): the layout of
vuln.go.dev, index/db.json, index/modules.json and ID/<id>.json.

Usage: vulndb.py SRC DIR
"""
import json
import os
import re
import sys


def main(src, out):
    osv = os.path.join(src, "data", "osv")
    os.makedirs(os.path.join(out, "index"), exist_ok=True)
    os.makedirs(os.path.join(out, "ID"), exist_ok=True)
    modules = {}
    newest = ""
    # The module's pseudo-version dates its commit: the database's age.
    m = re.search(r"-(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})-[0-9a-f]{12}$", os.path.normpath(src))
    commit = "%s-%s-%sT%s:%s:%sZ" % m.groups() if m else ""
    for name in sorted(os.listdir(osv)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(osv, name), encoding="utf-8") as f:
            entry = json.load(f)
        vid = entry["id"]
        # The repository's newer entries leave modified at the zero time
        # (the published database sets it); the commit's date stands in.
        modified = entry.get("modified", "")
        if modified.startswith("0001-") and commit:
            modified = commit
        newest = max(newest, modified)
        with open(os.path.join(out, "ID", vid + ".json"), "w", encoding="utf-8") as f:
            json.dump(entry, f)
        for affected in entry.get("affected", []):
            path = affected.get("package", {}).get("name", "")
            if not path:
                continue
            # No fixed version: govulncheck then reads the entry itself
            # and decides from its ranges.
            vulns = modules.setdefault(path, {})
            vulns[vid] = {"id": vid, "modified": modified}
    if not newest:
        sys.exit("vulndb.py: no OSV entries under " + osv)
    with open(os.path.join(out, "index", "db.json"), "w", encoding="utf-8") as f:
        json.dump({"modified": newest}, f)
    with open(os.path.join(out, "index", "modules.json"), "w", encoding="utf-8") as f:
        json.dump([{"path": p, "vulns": list(v.values())} for p, v in sorted(modules.items())], f)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
