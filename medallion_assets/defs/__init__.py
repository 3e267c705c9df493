"""The code location's components (``dg list defs``): each folder's ``defs.yaml`` is one."""
