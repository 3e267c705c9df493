"""What executes: Spark SQL, S3 extract, atomic lake publish, warehouse load, validation.

Filled in by the code-location issue; the package exists now so the layout of DESIGN.md §2
does not move later.
"""
