# Copyright (c) sandboxguard contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# sandboxguard: the two commands a new user needs are `make demo` and `make test`.
# Every target sets up what it needs first (idempotent, cached under .cache/).
SHELL := /bin/bash
.DEFAULT_GOAL := help
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV := $(TOP)/.venv
export PATH := $(VENV)/bin:$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(TOP)/.cache/collections
export ANSIBLE_CONFIG := $(TOP)/ansible.cfg

.PHONY: help setup engine images demo test docs lint sync check-sync unit pythons integration sanity ansible-lint molecule galaxy clean

help:
	@echo "make demo   set up, then show the main job: a container drops a setuid file into a bind mount; audit, strip, audit again"
	@echo "make test   set up, then run every test layer (ends non-zero on any failure)"
	@echo "make docs   build the collection's docs site (antsibull-docs + Sphinx) into build/docs/html"
	@echo "make sync   copy python/src/sandboxguard into plugins/module_utils/sandboxguard"

setup:
	@bash tools/setup.sh

engine: setup
	@bash tools/docker-engine.sh

images: engine
	@bash tools/build-images.sh

# The demo needs neither the test images nor the test tools: Docker, busybox-static, libcap2-bin
# and a .venv with ansible-core (tools/setup.sh --demo), an image made from the host's own
# busybox and setcap in a second (tools/demo-image.sh). `make test` installs the rest itself.
demo:
	@bash tools/setup.sh --demo
	@bash tools/docker-engine.sh
	@bash tools/demo.sh

test: images
	@bash tools/run-tests.sh

docs: setup
	@bash tools/docs.sh build

sync:
	@python3 tools/sync_module_utils.py

clean:
	rm -rf .cache/collections .cache/sanity .pytest_cache .ruff_cache tests/output build/docs .nox
