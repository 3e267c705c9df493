"""Pure scheduling decisions as plain data: profiles, throttles, retry and healing decisions,
recovery-path choice, kill-switch evaluation. No Dagster and no Spark imports.

Filled in by the control-plane issue; the package exists now so the layout of DESIGN.md §2
does not move later.
"""
