"""Thin Dagster adapters: catalog datasets -> asset specs -> assets, jobs, schedules, sensors,
resources. The one place that imports Dagster, apart from ``medallion_assets.definitions``.
"""
