# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Parsing fanotify event records (pure: buffers built here in the kernel's layout)."""
import os
import struct

from sandboxguard._guard import fanotify
from sandboxguard._guard import guard as guardmod
from sandboxguard._guard.handles import fsid_key

HANDLE = struct.pack("=Ii", 8, 1) + b"\x01\x02\x03\x04\x05\x06\x07\x08"


def info(info_type, fsid, handle, name=None):
    body = struct.pack("=ii", *fsid) + handle + ((name + b"\0") if name is not None else b"")
    body += b"\0" * (-(len(body) + 4) % 4)
    return struct.pack("=BBH", info_type, 0, 4 + len(body)) + body


def event(mask, records=b"", fd=-1, pid=42):
    return struct.pack("=IBBHQii", 24 + len(records), 3, 0, 24, mask, fd, pid) + records


def test_dfid_name_record_gives_directory_handle_fsid_and_name():
    buf = event(fanotify.FAN_CREATE, info(fanotify.FAN_EVENT_INFO_TYPE_DFID_NAME, (7, -2), HANDLE, b"suid"))
    (ev,) = fanotify.parse_events(buf)
    assert ev.mask == fanotify.FAN_CREATE and ev.pid == 42
    assert ev.dir_handle == HANDLE and ev.fsid == (7, -2) and ev.name == b"suid"
    assert fsid_key(ev.fsid) == 7 | (0xFFFFFFFE << 32)


def test_name_with_newline_and_non_utf8_bytes_is_kept_as_bytes():
    name = b"a\nb\xff"
    buf = event(fanotify.FAN_ATTRIB, info(fanotify.FAN_EVENT_INFO_TYPE_DFID_NAME, (1, 1), HANDLE, name)
                + info(fanotify.FAN_EVENT_INFO_TYPE_FID, (1, 1), HANDLE))
    (ev,) = fanotify.parse_events(buf)
    assert ev.name == name and ev.obj_handle == HANDLE


def test_overflow_event_has_no_records_and_several_events_parse_in_order():
    buf = (event(fanotify.FAN_Q_OVERFLOW)
           + event(fanotify.FAN_MOVED_TO | fanotify.FAN_ONDIR,
                   info(fanotify.FAN_EVENT_INFO_TYPE_DFID_NAME, (1, 1), HANDLE, b"dist")))
    first, second = fanotify.parse_events(buf)
    assert first.mask == fanotify.FAN_Q_OVERFLOW and first.dir_handle is None and first.name is None
    assert second.mask & fanotify.FAN_ONDIR and second.name == b"dist"


def test_truncated_record_stops_parsing_without_reading_past_the_buffer():
    buf = event(fanotify.FAN_CREATE, info(fanotify.FAN_EVENT_INFO_TYPE_DFID_NAME, (1, 1), HANDLE, b"x"))
    assert fanotify.parse_events(buf[:-3]) == []


def test_an_event_carrying_an_fd_has_it_closed():
    fd = os.open("/dev/null", os.O_RDONLY)
    fanotify.parse_events(event(fanotify.FAN_CLOSE_WRITE, fd=fd))
    try:
        os.fstat(fd)
    except OSError:
        pass
    else:
        raise AssertionError("the fd from the event was left open")


def test_human_line_names_path_actions_modes_caps_and_latency():
    line = guardmod.human_line({"path": "/s/docker/t/ping", "actions": ["setuid", "caps"], "mode_before": "04755",
                                "mode_after": "0755", "caps_before": "cap_net_raw=ep", "latency_ms": 12.3,
                                "via": "event", "error": None})
    assert line == ("stripped /s/docker/t/ping (setuid, caps; 04755 -> 0755, had cap_net_raw=ep) "
                    "12 ms after the change [event]")
