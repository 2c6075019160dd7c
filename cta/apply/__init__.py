"""Applying proposals to tables: sampled perturbed tables (ADVETA's protocol, one name per
column) with the SQL identifiers and cells of what they add."""
