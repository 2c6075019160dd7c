"""docker/: the compose stack is complete and valid, the images follow the README's steps, and
(marked ``docker``, where a Docker daemon can be had) the stack builds and runs for real.

Without a Docker daemon or Compose those tests skip, saying why; with
``CTA_TEST_DOCKER=required`` (a machine that has them) their absence fails instead."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
DOCKER = REPO / "docker"


def _missing(reason: str) -> None:
    """Skip for want of Docker, or fail where ``CTA_TEST_DOCKER=required`` promised it."""
    if os.environ.get("CTA_TEST_DOCKER") == "required":
        pytest.fail(f"CTA_TEST_DOCKER=required, but {reason}")
    pytest.skip(reason)


def _run_steps(dockerfile: Path) -> str:
    text = dockerfile.read_text(encoding="utf-8").replace("\\\n", " ")
    return " ".join(" ".join(step.split()) for step in re.findall(r"^RUN (.+)$", text, re.M))


def test_compose_runs_api_worker_and_postgres_on_a_volume() -> None:
    compose = yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))
    services = compose["services"]
    assert {"api", "worker", "postgres", "migrate"} <= set(services)
    assert services["api"]["command"][:2] == ["cta", "serve"]
    assert services["worker"]["command"] == ["cta", "worker"]
    assert services["migrate"]["command"] == ["cta", "jobs", "migrate"]
    for name in ("api", "worker", "migrate"):
        env = services[name]["environment"]
        assert env["CTA_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert services[name]["build"]["dockerfile"] == "docker/Dockerfile"
    assert "CTA_API_KEYS" in services["api"]["environment"]  # binds 0.0.0.0 in its container
    volume = services["postgres"]["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cuda"])
def test_images_bake_the_artefacts_with_the_readmes_steps(name: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    steps = _run_steps(DOCKER / name)
    for step in ("bash scripts/install", "cta setup"):
        assert step in steps and step.split()[-1] in readme
    assert "wordnet-base wordnet-sense-index" in steps
    text = (DOCKER / name).read_text(encoding="utf-8")
    assert "HF_HUB_OFFLINE=1" in text and "CTA_HOME=/opt/cta" in text
    # (COPY --from copies from another stage, not from the repository)
    for copied in re.findall(r"^COPY (?!--from)(?:--\S+ )*(\S+)", text, flags=re.MULTILINE):
        assert (REPO / copied).exists(), f"{name} copies {copied}, which is missing"
    # what the image needs at run time and what `cta setup` reads are in the build context
    ignore = (DOCKER / f"{name}.dockerignore").read_text(encoding="utf-8")
    for needed in ("data/annotations", "models", "cta", "retriever", "indexes", "scripts/install"):
        assert f"COPY {needed} " in text and f"!{needed}" in ignore, needed


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cuda"])
def test_images_need_no_registry_beyond_their_base_images(name: str) -> None:
    """Base images are build arguments, no `# syntax=` line fetches a frontend image, and the
    CA bundle a build may need arrives as a secret, not as a file in a layer."""
    text = (DOCKER / name).read_text(encoding="utf-8")
    assert not re.search(r"^# *syntax=", text, flags=re.MULTILINE)
    stages = set(re.findall(r"^FROM \S+ AS (\S+)", text, flags=re.MULTILINE))
    for base in re.findall(r"^FROM (\S+)", text, flags=re.MULTILINE):
        assert base.startswith("${") or base in stages, f"{name}: FROM {base}"
    assert "--mount=type=secret,id=ca-bundle" in text
    assert not re.search(r"^(COPY|ADD) .*(cert|\.crt|\.pem)", text, flags=re.MULTILINE | re.I)


def test_docker_compose_config_validates() -> None:
    """`docker compose config` (plugin) or `docker-compose config` (Debian's docker-compose)."""
    if shutil.which("docker-compose"):
        cmd = ["docker-compose"]
    elif (
        shutil.which("docker")
        and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0
    ):
        cmd = ["docker", "compose"]
    else:
        _missing(
            "neither `docker compose` nor `docker-compose` is installed (apt-get install docker-compose)"
        )
    run = subprocess.run(
        [*cmd, "-f", str(DOCKER / "compose.yaml"), "config", "--quiet"],
        env={**os.environ, "CTA_API_KEYS": '["test-key"]'},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.docker
@pytest.mark.timeout(4800)
def test_compose_smoke_builds_and_runs_the_stack() -> None:
    """scripts/compose-smoke: the images build, the stack comes up, a table is perturbed
    through the API and a job through the SDK survives its worker being killed."""
    daemon = subprocess.run(
        ["bash", str(REPO / "scripts" / "docker-daemon")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if daemon.returncode != 0:
        _missing(daemon.stderr.strip() or "no Docker daemon")
    run = subprocess.run(
        ["bash", str(REPO / "scripts" / "compose-smoke")],
        capture_output=True,
        text=True,
        timeout=4700,
    )
    print(run.stdout)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    for step in (
        "build cta:smoke",
        "api ready",
        "perturb books.json",
        "kill the worker mid-job",
        "job done, nothing lost",
        "compose down",
    ):
        assert any(line.startswith("ok") and step in line for line in lines), step
    assert lines[-1].startswith("ok   smoke passed")


def test_required_docker_fails_where_it_would_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTA_TEST_DOCKER", "required")
    with pytest.raises(pytest.fail.Exception, match="CTA_TEST_DOCKER=required, but no daemon"):
        _missing("no daemon")
    monkeypatch.delenv("CTA_TEST_DOCKER")
    with pytest.raises(pytest.skip.Exception, match="no daemon"):
        _missing("no daemon")
