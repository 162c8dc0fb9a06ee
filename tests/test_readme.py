"""Every command in the README is run: by CI (the Quick start) or here."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT / "core"), str(ROOT), e.get("PYTHONPATH", "")])
    return e


def test_quick_start_commands_are_what_ci_runs():
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = [b.strip() for b in re.findall(r"```bash\n(.*?)```", quick, flags=re.S)]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text()
    for c in commands:
        assert c in ci, c
    assert "recallite-mcp demo" in commands[0] and "pytest" in commands[1]


def test_cli_examples_run(tmp_path):
    section = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    script = re.findall(r"```bash\n(.*?)```", section, flags=re.S)[0]
    lines = [l for l in script.splitlines() if l.strip()]
    assert lines
    for line in lines:
        argv = line.split()
        assert argv[0] == "recallite-mcp"
        # quoted arguments: let the shell split them, with our module in place of the script
        cmd = f"{sys.executable} -m recallite_mcp " + line[len("recallite-mcp "):] + " --embedder hash"
        res = subprocess.run(cmd, shell=True, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, (line, res.stderr)


def test_python_api_example_runs(tmp_path):
    section = README.split("## Python API", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "deprecated" in res.stdout and (tmp_path / "dump.jsonl").exists()


def test_client_config_snippets_are_valid_json():
    for snippet in blocks("json"):
        data = json.loads(snippet)
        server = data["mcpServers"]["recallite"]
        assert server["command"] == "uvx" and server["args"][0] == "recallite-mcp"


@pytest.mark.skipif(shutil.which("uvx") is None, reason="uv is not installed (CI installs it)")
def test_uvx_from_checkout_serves_mcp(tmp_path):
    """`uvx --from . recallite-mcp --db ...` as the README says, driven over stdio."""
    import anyio
    from mcp import Client, StdioServerParameters

    async def run():
        params = StdioServerParameters(
            command=shutil.which("uvx"),
            args=["--from", str(ROOT), "recallite-mcp", "--db", str(tmp_path / "uvx.db"), "--embedder", "hash"],
            env=dict(os.environ),  # uv needs the machine's index and certificate settings
        )
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            res = await client.call_tool("recallite_remember", {"content": "uvx works"})
            assert not res.is_error
            return names

    names = anyio.run(run)
    assert "recallite_context" in names


def test_conversation_memory_example_runs(tmp_path):
    section = README.split("## Conversation memory", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Biscuit" in res.stdout and "s1 1 user" in res.stdout
