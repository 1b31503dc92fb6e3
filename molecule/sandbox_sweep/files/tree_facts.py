# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Print {relative path: {type, uid, gid, mode, caps, sha256}} for each tree given, as JSON.

For verify.yml: one call reads owner, mode bits, the security.capability xattr and the
content hash of every entry, without following symlinks.
"""
import hashlib
import json
import os
import stat
import sys


def entry(path):
    st = os.lstat(path)
    out = {"uid": st.st_uid, "gid": st.st_gid, "mode": "%05o" % stat.S_IMODE(st.st_mode),
           "type": "d" if stat.S_ISDIR(st.st_mode) else "f" if stat.S_ISREG(st.st_mode) else "other",
           "caps": "security.capability" in os.listxattr(path, follow_symlinks=False)}
    if out["type"] == "f":
        with open(path, "rb") as f:
            out["sha256"] = hashlib.sha256(f.read()).hexdigest()
    return out


result = {}
for top in sys.argv[1:]:
    tree = {".": entry(top)}
    for here, dirs, files in os.walk(top):
        for name in dirs + files:
            full = os.path.join(here, name)
            tree[os.path.relpath(full, top)] = entry(full)
    result[top] = tree
json.dump(result, sys.stdout, sort_keys=True)
