"""ClinSQL: cohort text-to-SQL over MIMIC-IV and its rubric-tree evaluation."""
