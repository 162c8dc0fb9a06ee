from .storage.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION  # noqa: F401  (moved; this path goes once its importers do)
