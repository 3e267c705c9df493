"""OpenLineage: the events of the static lineage (``events``) and, through the Dagster hook in
``adapters/openlineage_events.py``, of each run."""
