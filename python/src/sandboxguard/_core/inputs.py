# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""PRIVATE to the library and the collection.

Inputs as AWX surveys and ``-e`` send them, parsed by one rule.

An AWX survey has no list, boolean or "unset" type: a blank optional field arrives as
``""``, a list as one comma-separated string, a boolean as ``"true"``/``"false"``
(and ansible-core 2.19 refuses ``when: var`` on a string). Every playbook, role and
module of the collection reads its inputs through these three functions (the filter
plugins ``as_list``, ``as_bool`` and ``as_value`` are the same functions):

- ``as_list``: None, ``""`` or blanks mean no items; a string is split on commas; a
  list keeps its items, each of which may itself be a comma-separated string; items
  are stripped and blank items dropped.
- ``as_bool``: True/False as they are; the words of :data:`TRUE_WORDS` and
  :data:`FALSE_WORDS` (any case, around blanks): ``true``/``false``, ``yes``/``no``,
  ``on``/``off``, ``1``/``0`` and ``y``/``n``, ``t``/``f`` - the words Ansible's own
  ``bool`` option type takes, so a value means the same in a role variable, a module
  option and a setting; the integers 1 and 0; None or a blank string is *default*;
  anything else is an error naming the value. :func:`bool_word` is the same rule without
  a default (the library's one boolean parser: ``bwrap_settings`` reads ``readonly`` with it).
- ``as_value``: None or a blank string is *default*; anything else as it is (so
  ``0`` stays 0 where Jinja's ``default(x, true)`` would replace it).
"""

import math

from ..errors import InputError

TRUE_WORDS = ("true", "yes", "on", "1", "y", "t")
FALSE_WORDS = ("false", "no", "off", "0", "n", "f")


def is_blank(value):
    """None, or a string of nothing but whitespace."""
    return value is None or (isinstance(value, str) and not value.strip())


def as_list(value):
    """A list of non-blank stripped strings from a list, a comma-separated string or nothing."""
    if is_blank(value):
        return []
    if isinstance(value, (str, bytes)):
        items = [value]
    elif isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
    else:
        items = [value]
    out = []
    for item in items:
        if item is None:
            continue
        if isinstance(item, bytes):
            item = item.decode("utf-8", "surrogateescape")
        if isinstance(item, bool) or not isinstance(item, str):
            item = str(item)
        out.extend(part.strip() for part in item.split(",") if part.strip())
    return out


def bool_word(value):
    """True or False from a boolean, 1 or 0, or one of the boolean words; None for anything
    else (a blank string included)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return bool(value) if value in (0, 1) else None
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    return None


def as_bool(value, default=False, name="value"):
    """True or False from a boolean, a survey string or nothing (*default*; None: the
    caller's own default applies, e.g. a module's, and the message names none)."""
    if is_blank(value):
        return default
    parsed = bool_word(value)
    if parsed is not None:
        return parsed
    raise InputError("%s: %r is not a boolean: use true or false (or leave it blank for the default%s)"
                     % (name, value, "" if default is None else " %s" % ("true" if default else "false")))


def as_value(value, default=None):
    """*value*, or *default* when it is None or a blank string."""
    if is_blank(value):
        return default
    return value.strip() if isinstance(value, str) else value


def as_mode(value, name="mode"):
    """Permission bits from an int (0o644) or an octal string ('0644', '644'); InputError
    naming *name* for anything else or bits beyond 0o777."""
    try:
        mode = value if isinstance(value, int) and not isinstance(value, bool) else int(str(value).strip(), 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777:
        raise InputError("%s %r: give octal permission bits such as '0644'" % (name, value))
    return mode


def seconds(value, name, allow_zero=True, least=None):
    """A finite number of seconds from a number or a numeric string (None: 0 where 0 is
    allowed); InputError naming *name* (and *least*, what is allowed) for NaN, infinity, a
    negative, a boolean, a blank or anything that is not a number (and 0 unless *allow_zero*)."""
    if value is None and allow_zero:
        return 0.0
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        least = least or ("0 or more" if allow_zero else "more than 0")
        raise InputError("%s must be a finite number of seconds, %s; not %r" % (name, least, value))
    return number


def budget(value, name="budget", default=None):
    """The budget rule, the one every entry point applies (the walk's options, the modules'
    ``budget``/``budget_per_step``, the CLI's ``--budget``/``--budget-per-step``, the roles'
    ``budget`` filter): a finite number of seconds, 0 or more, 0 meaning no limit; None is
    *default* (None: 0, no limit). NaN, infinity, negatives, booleans, blanks and words are
    refused with one InputError: ``<name> must be a finite number of seconds, 0 (no limit)
    or more; not <value>``."""
    if value is None and default is not None:
        value = default
    return seconds(value, name, least="0 (no limit) or more")
