# GENERATED from python/src/sandboxguard/_guard/events.py by tools/sync_module_utils.py: edit the source, not this copy.
# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

The guard's event intake: read fanotify events, filter them by directory handle, fix a
privileged regular file through a held directory fd, hand a directory moved in to a job.
An event is only ever a hint: the entry is looked up again by name under the directory
opened by handle, never following a symlink, and changed only through strip's proven handle.
"""
import os
import stat
import time

from .. import strip as stripmod
from .._core.text import escape
from . import fanotify
from .handles import fsid_key
from .lines import fd_path, file_record
from .rootset import DIR_READ

MAX_READS_PER_POLL = 16  # reads of events (256 KiB each) handled before the loop looks at anything else
READ_BYTES = 1 << 18


class EventIntake:
    """``guard`` gives fan_fd, stopping, coalesce_s, options (StripOptions), stats, log and
    emit_file; ``handles`` (HandleFilter) decides the roots, ``pool`` (JobPool) walks trees."""

    def __init__(self, guard, handles, pool):
        self.guard = guard
        self.handles = handles
        self.pool = pool

    def read_batch(self):
        """Read and handle what the fanotify fd holds; returns the number of events."""
        guard = self.guard
        total = 0
        if guard.coalesce_s:
            # Let a burst gather: one read of many events costs far less than many reads of
            # a few (measured: ~60 us of Python per batch, 3 events per batch under a build).
            time.sleep(guard.coalesce_s)
        for _read in range(MAX_READS_PER_POLL):  # then back to poll: jobs, rescans and a stop get their turn
            if guard.stopping:
                break
            events = fanotify.read_events(guard.fan_fd, READ_BYTES)
            if not events:
                break
            total += len(events)
            self.handle_events(events, time.time())
        return total

    def handle_events(self, events, read_at):
        """Decide and fix one batch of events (see guard.py's module doc for the steps)."""
        stats = self.guard.stats
        stats["batches"] += 1
        stats["events"] += len(events)
        if any(e.mask & fanotify.FAN_Q_OVERFLOW for e in events):
            stats["overflows"] += 1
            self.guard.log("event queue overflow (events were lost): full sweep of every root, then back to events")
            self.handles.clear()
            self.pool.start_sweep(list(self.handles.rootset.roots.values()), "queue overflow")
            return
        dirs = {}  # (fsid, handle) -> {name: is_moved_dir}
        for event in events:
            if event.dir_handle is None or event.name is None:
                continue
            moved_dir = bool(event.mask & fanotify.FAN_ONDIR and event.mask & fanotify.FAN_MOVED_TO)
            if moved_dir:
                self.handles.clear()  # a tree moved: the answer may change below it
            if event.mask & fanotify.FAN_ONDIR and not moved_dir:
                continue  # a new empty directory, or a directory's own attributes
            names = dirs.setdefault((fsid_key(event.fsid), event.dir_handle), {})
            names[event.name] = names.get(event.name, False) or moved_dir
        for (fsid, handle), names in dirs.items():
            root = self.handles.root_of(fsid, handle)
            if root is None:
                stats["filtered"] += 1
                continue
            try:
                dfd = fanotify.open_by_handle(root.fd, handle, DIR_READ)
            except OSError:
                continue  # the directory went away
            try:
                for name, moved_dir in names.items():
                    if moved_dir:
                        self.pool.start_tree(dfd, name, root, read_at)
                    else:
                        self.fix_entry(dfd, name)
            finally:
                os.close(dfd)

    def fix_entry(self, dir_fd, name):
        """Fix one entry of a held directory if it is a privileged regular file or a device node.

        Returns the emitted record or None. Never follows a symlink: the entry is looked
        at with lstat semantics and changed only through strip.fix_file_at (the proven
        handle, the same inode as the lstat). The lstat's ctime (when the file last
        changed, e.g. was made setuid) gives latency_ms.
        """
        guard = self.guard
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return None  # gone again
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)):
            return None  # a device node is made harmless (root-owned, 0000) when the options say device
        try:
            entry = stripmod.fix_file_at(dir_fd, name, guard.options, expected=(st.st_dev, st.st_ino))
        except stripmod.ChangedUnderUs:
            return None  # replaced since the lstat: its own event follows
        except OSError as exc:
            guard.stats["errors"] += 1
            guard.log("did not fix %s: %s" % (escape("%s/%s" % (fd_path(dir_fd), os.fsdecode(name))), exc.strerror))
            return None
        if entry is None:
            return None
        entry["path"] = "%s/%s" % (fd_path(dir_fd), os.fsdecode(name))
        record = file_record(entry, round(max(0.0, time.time() - st.st_ctime) * 1000.0, 1), "event")
        guard.emit_file(record)
        return record
