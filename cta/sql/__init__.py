"""The SQL side: relational schemas and SQLite databases (original, synthesised, perturbed),
SQL identifiers, the gold-query rewriter, execution checks, and the examples a text-to-SQL
dataset holds."""
