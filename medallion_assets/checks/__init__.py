"""Checks on a staged table: what a check reports (``results``), the rules pandera judges
(``row_rules``), the table rules in Spark SQL (``table_rules``) and the validation that runs
them (``validation``)."""
