from .storage.sqlite.store import MEMORY_PATHS, Store, _explain, _split_sql  # noqa: F401  (moved; this path goes once its importers do)
