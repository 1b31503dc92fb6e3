# GENERATED from python/src/sandboxguard/_prevent/__init__.py by tools/sync_module_utils.py: edit the source, not this copy.
