"""The offline verifier: no LLM, every decision traceable to a finding or a classifier score."""
