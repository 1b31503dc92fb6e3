# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Filters as_list, as_bool, as_value and budget: AWX survey inputs read by one rule (sandboxguard._core.inputs).

A role passes a variable on to a module option with ``as_value(omit)`` or
``as_bool(omit, 'name')``: a blank value leaves the option out, so the module's own
default applies and the role does not write it a second time.
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core import inputs


def _is_omit(value):
    # ansible-core 2.19+: a sentinel object; before: a string placeholder
    return type(value).__name__ == "_OmitType" or (
        isinstance(value, str) and value.startswith("__omit_place_holder__"))


def as_list(value):
    return inputs.as_list(value)


def as_bool(value, default=False, name="value"):
    if _is_omit(default) and inputs.is_blank(value):
        return default
    try:
        return inputs.as_bool(value, None if _is_omit(default) else inputs.as_bool(default), name)
    except inputs.InputError as exc:
        raise AnsibleFilterError(str(exc)) from None


def as_value(value, default=None):
    return inputs.as_value(value, default)


def budget(value, name="budget", default=None):
    if inputs.is_blank(value) and default is not None:
        return default
    try:
        return inputs.budget(value, name)
    except inputs.InputError as exc:
        raise AnsibleFilterError(str(exc)) from None


class FilterModule:
    """AWX-safe input filters."""

    def filters(self):
        return {"as_list": as_list, "as_bool": as_bool, "as_value": as_value, "budget": budget}
