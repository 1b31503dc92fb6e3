# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PRIVATE to the library and the collection.

Module-side glue shared by audit_info and remediate: the options that decide the audit's
scope (one spec; the defaults come from the library), and the one scope request and settings
built from them (host_inputs: audit.audit_host and remediate.remediate_host take both)."""

from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._fleet import audit
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core import defaults
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard import strip as stripmod
from ansible_collections.sandboxguard.boundary.plugins.module_utils.sandboxguard._core.inputs import as_list, as_value, budget

SCOPE_ARGUMENT_SPEC = dict(
    paths=dict(type="list", elements="path", default=[]),
    hermes_home=dict(type="list", elements="path", aliases=["hermes_homes"], default=[]),
    sandbox_dir=dict(type="path"),
    github_runners=dict(type="list", elements="path", default=[]),
    gitlab_config=dict(type="path"),
    docker=dict(type="str", choices=list(audit.DOCKER_MODES), default=audit.DEFAULT_DOCKER_MODE),
    docker_host=dict(type="str"),
    budget=dict(type="raw", default=stripmod.DEFAULT_BUDGET_S),  # the library decides (inputs.budget)
    home_mode=dict(type="str"),
    home_where=dict(type="str", choices=list(defaults.HOME_WHERE_CHOICES), default=defaults.HOME_WHERE),
    profiles=dict(type="bool", default=True),
    create_profile_home=dict(type="bool", default=True),
    leak_users=dict(type="list", elements="str", default=[]),
    leak_tmp_patterns=dict(type="list", elements="str", default=list(defaults.TMP_PATTERNS)),
    leak_min_age=dict(type="int", default=0),
    leak_tmp_dir=dict(type="path", default=defaults.TMP_DIR),
    leak_spool_dir=dict(type="path", default=defaults.CRON_SPOOL_DIR),
    agent_user=dict(type="str"),
)


def scope_kwargs(params):
    """The keyword arguments of audit_host / remediate_host from a module's params (AWX strings parsed once;
    InputError for a budget the library's rule refuses)."""
    return dict(
        paths=as_list(params["paths"]), hermes_homes=as_list(params["hermes_home"]),
        sandbox_dir=as_value(params["sandbox_dir"]), github_runners=as_list(params["github_runners"]),
        gitlab_config=as_value(params["gitlab_config"]), docker=params["docker"],
        docker_host=as_value(params["docker_host"]), budget=budget(params["budget"]), home_mode=as_value(params["home_mode"]),
        home_where=params["home_where"], profiles=params["profiles"], create_profile_home=params["create_profile_home"],
        leak_users=as_list(params["leak_users"]), leak_tmp_patterns=as_list(params["leak_tmp_patterns"]) or None,
        leak_min_age=params["leak_min_age"], leak_tmp_dir=params["leak_tmp_dir"],
        leak_spool_dir=params["leak_spool_dir"], agent_user=as_value(params["agent_user"]))


def host_inputs(params, more_settings=None, request_extra=None, **settings):
    """(scope.Request, audit.Settings) of a module's params: the operation's one scope request,
    built once here, and the checks' (or fixes') settings (``settings``: the module's own,
    ``more_settings``: their defaults, e.g. remediate.SETTING_DEFAULTS)."""
    return audit.host_inputs(dict(scope_kwargs(params), **settings), more_settings, **(request_extra or {}))
