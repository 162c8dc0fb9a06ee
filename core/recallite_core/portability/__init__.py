"""Export and import in the documented JSON-lines format (docs/operations.md). Imports storage, text and the write path."""
