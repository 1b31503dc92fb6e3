# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""One verdict for a check (audit) and a fix (remediate): audit_record.verdict, fail closed."""
import pytest
from sandboxguard._fleet import audit, audit_record, remediate

ERR = [{"path": "/srv/a\nb", "op": "lstat", "error": "EACCES"}, {"path": "/srv/c", "op": "lstat", "error": "EIO"}]


@pytest.mark.parametrize("found, errors, complete, check, fix", [
    ([], [], True, "clean", "ok"),
    (["x"], [], True, "findings", "changed"),
    ([], [], False, "error", "failed"),       # nothing seen is never clean nor ok
    ([], ERR[:1], True, "error", "failed"),
    (["x"], ERR[:1], True, "findings", "failed"),  # a finding stands; a fix with an error failed
    (["x"], [], False, "findings", "failed"),
])
def test_the_one_verdict_of_a_check_and_of_a_fix(found, errors, complete, check, fix):
    assert audit_record.verdict(found, errors, complete)[0] == check
    assert audit_record.verdict(bool(found), errors, complete, kind="fix")[0] == fix
    assert audit_record.verdict(found, errors, complete)[2] is (complete and not errors)


def test_a_failure_names_the_first_error_escaped_and_counts_the_rest():
    status, reason, complete = audit_record.verdict([], ERR, True)
    assert (status, reason, complete) == ("error", "/srv/a\\nb: EACCES (and 1 more error(s))", False)
    assert audit_record.verdict([], [], False, kind="fix")[1] == "the fix did not complete"
    assert audit_record.verdict([], [], False)[1] == "the check did not complete"
    assert audit_record.verdict([], ERR, True, reason="given")[1] == "given"


def test_audit_and_remediate_build_their_statuses_with_it():
    check = audit._verdict([], ERR[1:], True)
    assert check["status"] == "error" and check["reason"] == "/srv/c: EIO" and check["complete"] is False
    section = remediate._verdict({"changed": True, "errors": [], "complete": False})
    assert section["status"] == remediate.FAILED and section["complete"] is False
    assert section["reason"] == "the fix did not complete"
    assert remediate._verdict({"changed": True, "errors": [], "complete": True})["status"] == remediate.CHANGED
