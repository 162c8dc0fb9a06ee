from .storage.sqlite.store import MEMORY_PATHS, Store, _split_sql, explain  # noqa: F401  (moved; this path goes once its importers do)
