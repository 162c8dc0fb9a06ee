"""The filters of the Memories and Curate pages: read from a request, shown as a form."""

from __future__ import annotations

from dataclasses import dataclass

from recallite_core.models import MEMORY_TYPES, SOURCE_TYPES, STATUSES

from .markup import Safe, h, options


@dataclass(frozen=True)
class Filters:
    scope: str = ""
    type: str = ""
    status: str = ""
    source: str = ""
    tag: str = ""  # comma-separated: memories with any of them

    @classmethod
    def read(cls, values: dict[str, str]) -> "Filters":
        return cls(**{k: values.get(k, "").strip() for k in ("scope", "type", "status", "source", "tag")})

    def tags(self) -> list[str]:
        return [t.strip() for t in self.tag.split(",") if t.strip()]

    def params(self) -> dict[str, str]:
        return {k: v for k, v in self.__dict__.items() if v}

    def narrows(self) -> bool:
        """True when something besides the scope is chosen (bulk changes ask for that)."""
        return bool(self.type or self.status or self.source or self.tag)

    def page(self, look, *, limit: int, offset: int):
        """One page of matching memories from ``Inspection.memories``."""
        return look.memories(scope=self.scope or None, types=[self.type] if self.type else None,
                             statuses=[self.status] if self.status else None,
                             sources=[self.source] if self.source else None, tags=self.tags() or None,
                             limit=limit, offset=offset)

    def fields(self, scopes: list[str]) -> Safe:
        """The select boxes and the tag field (inside a form the caller writes)."""
        return h(
            '<label>scope <select name="scope">{}</select></label>'
            '<label>type <select name="type">{}</select></label>'
            '<label>status <select name="status">{}</select></label>'
            '<label>source <select name="source">{}</select></label>'
            '<label>tags <input name="tag" value="{}" placeholder="a, b" size="12"></label>',
            options(scopes, self.scope, "all scopes"), options(MEMORY_TYPES, self.type, "any"),
            options(STATUSES, self.status, "any"), options(SOURCE_TYPES, self.source, "any"), self.tag,
        )

    def hidden(self) -> Safe:
        from .markup import join

        return join(h('<input type="hidden" name="{}" value="{}">', k, v) for k, v in self.params().items())
