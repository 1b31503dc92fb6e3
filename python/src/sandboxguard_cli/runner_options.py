# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The CI runner options of the commands that take a scope (sweep, watch, guard):
``--github-runner DIR`` (repeatable) and ``--gitlab-config FILE``, turned into scope
providers (runners.runner_providers) the library derives the roots from."""
from sandboxguard._privileged import runners


def add(parser):
    parser.add_argument("--github-runner", action="append", default=[], metavar="DIR",
                        help="a GitHub Actions runner's directory (the one holding .runner; repeatable): its work "
                             "folder is a root, its files given back to the runner user")
    parser.add_argument("--gitlab-config", metavar="FILE",
                        help="GitLab Runner's config.toml: the host directories its docker executor binds are roots "
                             "(needs Python 3.11 or later on the host)")


def providers(args):
    return runners.runner_providers(args.github_runner, args.gitlab_config)
