# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""Owners resolved once (sandboxguard.owners), and the CLI's --chown-to and --owner agree."""
import grp
import pwd

import pytest
from sandboxguard import owners
from sandboxguard_cli.commands import strip as strip_cli
from sandboxguard_cli.commands import sweep as sweep_cli
from sandboxguard_cli.main import UsageError


def _free_uid():
    uid = 4242421
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


ROOT_GROUP = grp.getgrgid(0).gr_name
ROOT_USER = pwd.getpwuid(0).pw_name


@pytest.mark.parametrize("text, ids", [
    ("0", (0, 0)), (ROOT_USER, (0, 0)), ("0:0", (0, 0)), (ROOT_USER + ":" + ROOT_GROUP, (0, 0)),
    (ROOT_USER + ":", (0, 0)), ("0:" + ROOT_GROUP, (0, 0)), (ROOT_USER + ":4242", (0, 4242)),
    (" 0:0 ", (0, 0)),
])
def test_owner_text_takes_names_or_ids_with_an_optional_group(text, ids):
    assert owners.parse_owner(text) == ids


def test_a_uid_without_passwd_entry_needs_a_group_and_works_with_one():
    uid = _free_uid()
    assert owners.parse_owner("%d:%d" % (uid, uid)) == (uid, uid)
    assert owners.parse_owner("%d:%s" % (uid, ROOT_GROUP)) == (uid, 0)
    with pytest.raises(ValueError, match="has no passwd entry on this host: give the group too"):
        owners.parse_owner(str(uid))


@pytest.mark.parametrize("text, words", [
    ("no-such-user-sgtest", "owner 'no-such-user-sgtest': no such user on this host"),
    ("0:no-such-group-sgtest", "group 'no-such-group-sgtest': no such group on this host"),
    (":0", "name the user too"),
    (":" + ROOT_GROUP, "name the user too"),
    ("", "owner is empty"),
])
def test_bad_owner_text_is_one_line_naming_it(text, words):
    with pytest.raises(ValueError, match=words) as caught:
        owners.parse_owner(text)
    assert "\n" not in str(caught.value)


def test_resolve_owner_takes_the_modules_owner_and_group_options():
    assert owners.resolve_owner(None) is None
    assert owners.resolve_owner(ROOT_USER, None) == (0, 0)
    assert owners.resolve_owner("0", "4242") == (0, 4242)
    assert owners.resolve_owner(0, 0) == (0, 0)
    with pytest.raises(ValueError, match="without an owner"):
        owners.resolve_owner(None, "0")
    # the modules' owner option takes the CLI's USER:GROUP text too
    assert owners.resolve_owner("0:4242") == (0, 4242)
    assert owners.resolve_owner(ROOT_USER + ":" + ROOT_GROUP, None) == (0, 0)
    with pytest.raises(ValueError, match="give one of them"):
        owners.resolve_owner("0:0", "0")


@pytest.mark.parametrize("text", ["0", ROOT_USER, "0:0", ROOT_USER + ":" + ROOT_GROUP, ROOT_USER + ":"])
def test_strip_chown_to_and_sweep_owner_accept_the_same_text(text):
    assert strip_cli._owner(text) == sweep_cli._owner(text) == owners.parse_owner(text)


@pytest.mark.parametrize("text", ["no-such-user-sgtest", ":0", str(_free_uid())])
def test_strip_chown_to_and_sweep_owner_refuse_the_same_text(text):
    with pytest.raises(UsageError, match=r"^--chown-to "):
        strip_cli._owner(text)
    with pytest.raises(UsageError, match=r"^--owner "):
        sweep_cli._owner(text)
