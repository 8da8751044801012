"""docker-compose.yml cannot run here, so it is checked against the code it deploys."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_three_services_with_redis_durable_and_healthy():
    services = compose()["services"]
    # the `monitoring` profile's (tests/deploy/test_monitoring.py) start only when asked for
    assert {name for name, service in services.items() if not service.get("profiles")} == {"redis", "api", "worker"}
    redis = services["redis"]
    command = " ".join(redis["command"])
    assert "--appendonly yes" in command and "--appendfsync always" in command
    assert "--maxmemory-policy noeviction" in command
    assert "--latency-monitor-threshold 50" in command  # RedisLatencySpikes (deploy/monitoring/alerts.yml)
    # its threads on the core the benches measure it on, unless the operator says otherwise ("" frees them)
    from bench._common import DEPLOYED_REDIS_CPUS

    pinned = "${ESCOBA_REDIS_CPUS-" + DEPLOYED_REDIS_CPUS + "}"
    assert f"--server_cpulist {pinned}" in command and f"--bio_cpulist {pinned}" in command
    # and the API keeps off them (api/server/serve.py keep_off): the same setting, the same default
    assert services["api"]["environment"]["ESCOBA_REDIS_CPUS"] == pinned
    assert redis["healthcheck"]["test"][-1] == "ping"
    assert any(v.endswith(":/data") for v in redis["volumes"])
    assert "redis-data" in compose()["volumes"]


def test_api_runs_gunicorn_gevent_and_worker_runs_rq():
    services = compose()["services"]
    api = services["api"]["command"]
    assert api[:2] == ["escoba", "serve"] and "0.0.0.0" in api
    assert "--threads" not in api  # the gevent worker holds a socket in a greenlet, not a thread
    assert int(api[api.index("--connections") + 1]) >= 10_000
    assert int(services["api"]["ulimits"]["nofile"]["hard"]) > int(api[api.index("--connections") + 1])
    assert services["worker"]["command"] == ["escoba", "worker", "--metrics-port", "9100"]
    for name in ("api", "worker"):
        assert services[name]["depends_on"]["redis"]["condition"] == "service_healthy"
    from api.server.serve import gunicorn_options

    assert gunicorn_options("0.0.0.0", 8000, 256, 1)["worker_class"] == "gevent"


def test_environment_is_exactly_what_the_code_reads():
    read = set(re.findall(r'env\.get\("([A-Z_]+)"', (ROOT / "events/config.py").read_text()))
    for name in ("api", "worker"):
        env = compose()["services"][name]["environment"]
        assert set(env) == read, f"{name}: compose sets {set(env) ^ read} differently from events/config.py"
        assert env["REDIS_URL"].startswith("redis://redis:")


def test_the_image_holds_every_package_and_the_console_script():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dockerfile = (ROOT / "Dockerfile").read_text()
    for package in project["tool"]["setuptools"]["packages"]["find"]["include"]:
        assert f"COPY {package.rstrip('*')} " in dockerfile
    assert project["project"]["scripts"]["escoba"] == "api.cli:main"


def test_the_image_is_built_with_the_compiled_simulator():
    """setup.py compiles engine/bots/sim.py: the wheel is built where a compiler is, and installed as built."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    _, build, run = dockerfile.split("\nFROM ")
    # python:3.11 has gcc and the Python headers; -slim has neither
    assert build.startswith("python:3.11 AS build\n")
    assert "COPY pyproject.toml setup.py README.md ./" in build and "pip wheel" in build
    assert run.startswith("python:3.11-slim\n") and "--no-index --find-links /wheels escoba" in run
