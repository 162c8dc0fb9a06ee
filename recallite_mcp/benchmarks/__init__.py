"""Benchmarks of recallite-mcp: deterministic task generators and scenarios for measuring learning."""
