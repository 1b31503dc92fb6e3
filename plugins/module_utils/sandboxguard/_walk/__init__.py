# GENERATED from python/src/sandboxguard/_walk/__init__.py by tools/sync_module_utils.py: edit the source, not this copy.
