"""Preflight: before a run starts Spark, check that everything it will touch answers.

``preflight(settings, catalog)`` returns one ``Finding`` per part — Spark's jars, the AWS
credentials (their source, never their value), the lake's storage (bucket or folder: there and
writable), the lake's catalog, the raw sources' buckets and the warehouse — each found in
seconds, so that a misconfigured run stops in one line with the fix instead of failing every
step after Spark has started. ``medallion run``/``build``/``backfill`` stop on a failed finding
(``require``, exit 2); ``medallion doctor`` prints them all.

    findings = preflight(settings, catalog)
    require(findings)  # PreflightFailed: one line per problem
"""

from medallion_assets.preflight.checks import preflight
from medallion_assets.preflight.findings import Finding, PreflightFailed, require

__all__ = ["Finding", "PreflightFailed", "preflight", "require"]
