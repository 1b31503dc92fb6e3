# GENERATED from python/src/sandboxguard/_core/engine_docs.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection. What an engine answered, checked before the
scope reads it (pure): an engine's garbage is that engine's error (EngineError), never a
traceback of the whole sweep."""
from .engine_api import EngineError
from .text import one_line


def _strings(value, where, what, allow_empty=True):
    """``value`` when it is None or a str without NUL (pure); EngineError naming ``where`` otherwise."""
    if value is None or (isinstance(value, str) and "\0" not in value and (allow_empty or value)):
        return value
    raise EngineError("%s: %s is not what the Engine API sends (%s)" % (what, where, type(value).__name__))


def checked_info(info, what="engine info"):
    """``info`` when the fields the engine facts read have the API's types (pure): OSType and
    DockerRootDir strings, SecurityOptions a list of strings; EngineError otherwise."""
    if not isinstance(info, dict):
        raise EngineError("%s: not an object" % what)
    _strings(info.get("OSType"), "OSType", what)
    _strings(info.get("DockerRootDir"), "DockerRootDir", what)
    options = info.get("SecurityOptions")
    if options is not None and not isinstance(options, list):
        raise EngineError("%s: SecurityOptions is not what the Engine API sends (%s)" % (what, type(options).__name__))
    for option in options or ():
        _strings(option, "SecurityOptions[]", what)
    return info


def checked_inspect(doc, what="an inspect document"):
    """``doc`` when the fields the scope decision reads have the API's types (pure): Id a
    non-empty string; Name, Config.Image, State.Status strings; Config.Labels strings to
    strings; Mounts a list of objects whose Type, Source and Destination are strings without
    NUL and RW a boolean. EngineError otherwise: an engine's garbage is that engine's error,
    never a traceback of the sweep."""
    if not isinstance(doc, dict):
        raise EngineError("%s: not an object" % what)
    _strings(doc.get("Id"), "Id", what, allow_empty=False)
    if not doc.get("Id"):
        raise EngineError("%s: no Id" % what)
    what = "container %s" % one_line(doc["Id"][:12])
    for key, kind in (("Name", str), ("Config", dict), ("State", dict), ("Mounts", list)):
        if doc.get(key) is not None and not isinstance(doc[key], kind):
            raise EngineError("%s: %s is not what the Engine API sends (%s)" % (what, key, type(doc[key]).__name__))
    config = doc.get("Config") or {}
    _strings(config.get("Image"), "Config.Image", what)
    labels = config.get("Labels")
    if labels is not None and not isinstance(labels, dict):
        raise EngineError("%s: Config.Labels is not what the Engine API sends" % what)
    for key, value in (labels or {}).items():
        _strings(key, "Config.Labels", what)
        _strings(value, "Config.Labels", what)
    _strings((doc.get("State") or {}).get("Status"), "State.Status", what)
    for mount in doc.get("Mounts") or ():
        if not isinstance(mount, dict):
            raise EngineError("%s: Mounts[] is not what the Engine API sends" % what)
        for key in ("Type", "Source", "Destination"):
            _strings(mount.get(key), "Mounts[].%s" % key, what)
        if "RW" in mount and not isinstance(mount["RW"], bool):
            raise EngineError("%s: Mounts[].RW is not what the Engine API sends" % what)
    return doc
