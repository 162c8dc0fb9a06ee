"""Recallite.empty_scope, on every backend: a recall in a scope that holds nothing found nothing,
silently, like one that matched nothing (a new user's trial); callers now tell the two apart."""


def test_empty_scope_tells_an_empty_scope_from_no_match(backend_mem):
    m = backend_mem
    assert m.empty_scope("proj-x") == {}  # nothing stored anywhere yet
    m.remember("Deploy the web app with make ship.", scope="web-app")
    m.remember("The web app is built with vite.", scope="web-app")
    gone = m.remember("Backups run nightly at 02:00.", scope="ops")
    m.deprecate(gone.id)
    assert m.empty_scope("proj-x") == {"web-app": 2, "ops": 1}  # most memories first
    assert m.empty_scope("web-app") is None
    assert m.empty_scope("ops") is None  # a deprecated memory is still held: not an empty scope
    assert m.recall("zebra", scope="web-app").memories == [] and m.empty_scope("web-app") is None
