"""A pair of memories holds one side of support and contradiction: recallite_relate stored both
`supports` and `contradicts` for the same pair (a new user's trial). Both backends."""

import pytest

from recallite_core import InvalidInputError


def _pair(m):
    a = m.remember(type="fact", content="The deploy job runs on the self-hosted runner.", scope="p")
    b = m.remember(type="fact", content="Deploys need the runner's cache volume mounted.", scope="p")
    return a, b


def _types(m, a, b):
    return sorted((r.from_id, r.to_id, r.type) for r in m.relations(a.id) if {r.from_id, r.to_id} == {a.id, b.id})


@pytest.mark.parametrize("backwards", [False, True])
def test_contradicts_replaces_supports_between_the_same_pair(backend_mem, backwards):
    m = backend_mem
    a, b = _pair(m)
    sup = m.relate(b.id, a.id, "supports") if backwards else m.relate(a.id, b.id, "supports")
    con = m.relate(a.id, b.id, "contradicts")
    end = (sup.from_id, sup.to_id)
    assert con.type == "contradicts" and con.replaced == [f"{sup.id}: {end[0]} supports {end[1]}"]
    assert _types(m, a, b) == [(a.id, b.id, "contradicts")]
    counts = m.relation_counts(sup.to_id)
    assert counts.evidence_count == 0 and counts.contradiction_count == 1
    again = m.relate(a.id, b.id, "contradicts")  # the same link again: returned, nothing replaced
    assert again.id == con.id and again.replaced == []


@pytest.mark.parametrize("backwards", [False, True])
def test_supports_is_refused_while_the_pair_contradicts(backend_mem, backwards):
    m = backend_mem
    a, b = _pair(m)
    con = m.relate(b.id, a.id, "contradicts") if backwards else m.relate(a.id, b.id, "contradicts")
    before = (m.get(a.id).confidence, m.get(b.id).confidence)
    with pytest.raises(InvalidInputError, match=f"contradicts .*\\({con.id}\\).*keep both.*Nothing was linked"):
        m.relate(a.id, b.id, "supports")
    assert _types(m, a, b) == [(con.from_id, con.to_id, "contradicts")]
    assert (m.get(a.id).confidence, m.get(b.id).confidence) == before  # no confidence moved
    m.resolve_conflict(a.id, b.id, keep="both")  # the way out the message names
    assert m.relate(a.id, b.id, "supports").type == "supports"
    assert _types(m, a, b) == [(a.id, b.id, "supports")]


def test_other_link_types_are_unaffected(backend_mem):
    m = backend_mem
    a, b = _pair(m)
    m.relate(a.id, b.id, "requires")
    m.relate(a.id, b.id, "supports")
    assert m.relate(a.id, b.id, "causes").replaced == []
    assert _types(m, a, b) == [(a.id, b.id, "causes"), (a.id, b.id, "requires"), (a.id, b.id, "supports")]
