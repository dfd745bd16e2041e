"""The rules: one module per rule (or per tightly related pair), discovered by
:mod:`synclint.rules.registry`. See :mod:`synclint.rules.base` for the interface."""
