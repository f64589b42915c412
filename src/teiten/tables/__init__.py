"""The tables of a workload's report section that are each their own folder: ``KEY/__init__.py``
makes its figures (on analysis's floor of the import graph), ``KEY/table.py`` draws its table
(on the report's), ``KEY/texts.yaml`` holds its words. :mod:`teiten.analysis.tables` finds
them; this package imports nothing (docs/DESIGN.md, "A report table")."""
