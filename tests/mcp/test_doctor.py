"""`recallite-mcp doctor` prints a client config that starts this installation, today.

Issue 15: the config it printed ran `uvx recallite-mcp`, which fails until the package is on
the index, and `uvx --from <checkout>` kept serving the old build after a pull.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from recallite_mcp import doctor
from recallite_mcp.doctor import launch_command, run_doctor
from recallite_mcp.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def _server(report: dict) -> dict:
    return report["mcp_config"]["mcpServers"]["recallite"]


def _list_tools_over_stdio(command: str, args: list[str], cwd: str) -> set[str]:
    from mcp import Client, StdioServerParameters

    async def run():
        params = StdioServerParameters(command=command, args=args, cwd=cwd, env=dict(os.environ))
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            res = await client.call_tool("recallite_remember", {"content": "The doctor's config starts the server."})
            assert not res.is_error
            return names

    return anyio.run(run)


def test_the_config_doctor_prints_names_an_absolute_executable_that_exists(tmp_path):
    report = run_doctor(Settings(db=str(tmp_path / "m.db"), embedder="hash"))
    server = _server(report)
    assert os.path.isabs(server["command"]) and os.path.isfile(server["command"])
    assert server["command"] != "uvx"  # the package is not on the index yet
    assert server["args"][server["args"].index("--db") + 1] == str(tmp_path / "m.db")
    assert "--scope" not in server["args"]  # scopes follow the client's roots
    assert _server({"mcp_config": report["after_publishing"]})["args"][0] == "recallite-mcp"


def test_the_claude_code_command_runs_the_same_server(tmp_path):
    report = run_doctor(Settings(db=str(tmp_path / "m.db"), embedder="hash"))
    argv = shlex.split(report["claude_code"])
    assert argv[:6] == ["claude", "mcp", "add", "-s", "user", "recallite"] and argv[6] == "--"
    server = _server(report)
    assert argv[7:] == [server["command"], *server["args"]]


def test_the_config_printed_by_the_doctor_command_starts_a_server_over_stdio(tmp_path):
    """What a new user does: run doctor, paste its config, and the client lists the tools."""
    script = launch_command()["argv"]
    out = subprocess.run([*script, "doctor", "--json", "--db", str(tmp_path / "m.db"), "--embedder", "hash"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    server = _server(json.loads(out.stdout))
    assert os.path.isabs(server["command"])
    elsewhere = tmp_path / "another-folder"  # clients start servers from their own working directory
    elsewhere.mkdir()
    names = _list_tools_over_stdio(server["command"], server["args"], str(elsewhere))
    assert {"recallite_context", "recallite_remember", "recallite_feedback"} <= names


def test_without_a_script_the_config_runs_this_python_with_dash_m(tmp_path, monkeypatch):
    monkeypatch.setattr(doctor, "_script_path", lambda: None)
    monkeypatch.setattr(doctor, "_in_uv_cache", lambda prefix: False)
    argv = launch_command()["argv"]
    assert argv == [os.path.abspath(sys.executable), "-m", "recallite_mcp"]
    res = subprocess.run([*argv, "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "doctor" in res.stdout


def test_in_a_uvx_environment_built_from_a_checkout_the_config_says_uvx_from_that_checkout(monkeypatch):
    monkeypatch.setattr(doctor, "_in_uv_cache", lambda prefix: True)
    monkeypatch.setattr(doctor, "_installed_from_folder", lambda: "/home/me/src/recallite-mcp")
    argv = launch_command()["argv"]
    assert os.path.basename(argv[0]) in ("uvx", "uvx.exe") and argv[1:] == ["--from", "/home/me/src/recallite-mcp", "recallite-mcp"]
    monkeypatch.setattr(doctor, "_installed_from_folder", lambda: None)
    assert launch_command()["argv"][1:] == ["recallite-mcp"]


def test_uv_cache_environments_are_recognised():
    assert doctor._in_uv_cache("/home/me/.cache/uv/archive-v0/Zx81mNw77Lp0")
    assert not doctor._in_uv_cache("/home/me/project/.venv")
    assert not doctor._in_uv_cache(sys.prefix) or "uv" in Path(sys.prefix).parts


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")  # the working copy's cache keys


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("uvx") is None, reason="uv is not installed (CI installs it)")
def test_uvx_from_a_checkout_rebuilds_after_an_edit(tmp_path):
    """`uvx --from <checkout>` served the old build after a pull: [tool.uv] cache-keys fix that."""
    checkout = tmp_path / "checkout"
    _copy_checkout(checkout)
    probe = ["python", "-c", "import recallite_mcp as r; print(getattr(r, 'PROBE', 'first build'))"]

    def run() -> str:
        res = subprocess.run([shutil.which("uvx"), "--from", str(checkout), *probe], cwd=tmp_path,
                             capture_output=True, text=True, timeout=600,
                             # a PYTHONPATH pointing at a checkout would import that instead of the build
                             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        assert res.returncode == 0, res.stderr
        return res.stdout.strip()

    assert run() == "first build"
    init = checkout / "recallite_mcp" / "__init__.py"
    init.write_text(init.read_text() + '\nPROBE = "after the pull"\n')
    assert run() == "after the pull"
