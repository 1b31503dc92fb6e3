# Copyright (c) sandboxguard contributors
# SPDX-License-Identifier: Apache-2.0
"""The community collections' extra checks, from antsibull-nox (sessions in antsibull-nox.toml).

Run through tools/extra-checks.sh (the extra-checks step of make test), which puts the docs venv's
nox first on PATH and pins what the sessions install with requirements/docs.txt as PIP_CONSTRAINT.
"""
import antsibull_nox

antsibull_nox.load_antsibull_nox_toml()
