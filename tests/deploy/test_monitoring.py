"""The `monitoring` profile of both compose files (deploy/monitoring/), checked for real.

Docker cannot run here, so the compose files are checked as written; the configuration they mount
is checked by Debian's own tools (promtool, amtool); and Debian's Prometheus and redis_exporter
scrape a running ``escoba serve``, an ``escoba worker`` and a Redis master with a replica after a
game has been played, with the same scrape jobs and rules: every query of the dashboard returns
data, and every metric the alert rules name exists.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
DASHBOARD = MONITORING / "grafana" / "dashboards" / "escoba.json"
RULES = MONITORING / "alerts.yml"
COMPOSE = {"docker-compose.yml": "prometheus.yml", "docker-compose.cluster.yml": "prometheus-cluster.yml"}
PROFILE = {"prometheus", "alertmanager", "grafana", "redis-exporter"}
# the metrics of the project (api/server/observability.py, workers/metrics.py) and of redis_exporter
SELECTOR = re.compile(r"\b((?:escoba|redis)_[a-z_]+|up)\b(\{[^}]*\})?")


def compose(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def dashboard_queries() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [target["expr"] for panel in panels for target in panel.get("targets", [])]


def rule_queries() -> dict[str, str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return {rule["alert"]: rule["expr"] for group in groups for rule in group["rules"]}


def selectors(expr: str) -> set[str]:
    return {name + (matchers or "") for name, matchers in SELECTOR.findall(expr)}


# --- the compose files ----------------------------------------------------------------------

@pytest.mark.parametrize("file", COMPOSE)
def test_the_monitoring_profile_runs_prometheus_alertmanager_grafana_and_redis_exporter(file):
    services = compose(file)["services"]
    profiled = {name for name, service in services.items() if service.get("profiles")}
    assert profiled == PROFILE and all(services[name]["profiles"] == ["monitoring"] for name in PROFILE)
    for name in PROFILE:
        for volume in services[name].get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), f"{file}: {name} mounts {source}, which is not in the repository"
    prometheus = services["prometheus"]
    config = next(arg.split("=", 1)[1] for arg in prometheus["command"] if arg.startswith("--config.file="))
    assert "./deploy/monitoring:/etc/prometheus:ro" in prometheus["volumes"]
    assert config == f"/etc/prometheus/{COMPOSE[file]}"
    assert {"prometheus-data", "grafana-data"} <= set(compose(file)["volumes"])


@pytest.mark.parametrize("file", COMPOSE)
def test_prometheus_scrapes_every_api_process_worker_and_redis_node_of_the_file(file):
    services = compose(file)["services"]
    jobs = {job["job_name"]: job for job in yaml.safe_load((MONITORING / COMPOSE[file]).read_text())["scrape_configs"]}
    apis = {n for n, s in services.items() if s.get("command", [])[:2] == ["escoba", "serve"]}
    workers = {n for n, s in services.items() if s.get("command", [])[:2] == ["escoba", "worker"]}
    nodes = {n for n, s in services.items() if "redis-server" in s.get("command", [])}
    assert apis and workers and nodes

    def names(job):
        return {name for sd in job.get("dns_sd_configs", []) for name in sd["names"]}

    assert names(jobs["escoba-api"]) == apis and jobs["escoba-api"]["dns_sd_configs"][0]["port"] == 8000
    assert names(jobs["escoba-worker"]) == workers
    for name in workers:
        command = services[name]["command"]
        assert int(command[command.index("--metrics-port") + 1]) == jobs["escoba-worker"]["dns_sd_configs"][0]["port"]
    targets = {t for sc in jobs["redis"]["static_configs"] for t in sc["targets"]}
    assert targets == {f"redis://{node}:6379" for node in nodes}, "every Redis node, and only those, is scraped"
    assert jobs["redis"]["relabel_configs"][-1]["replacement"] == "redis-exporter:9121"


@pytest.mark.parametrize("file", COMPOSE)
def test_no_api_is_given_a_flag_its_worker_class_does_not_read(file):
    """docker-compose.cluster.yml passed --threads 256 to the gevent worker, which ignores it."""
    from api.cli import _parser

    for name, service in compose(file)["services"].items():
        command = service.get("command", [])
        if command[:2] != ["escoba", "serve"]:
            continue
        args = _parser().parse_args(command[1:])
        assert args.worker_class == "gevent" and "--threads" not in command, name
        assert args.workers == 1, f"{name}: one process per container, so that each one's /metrics is scraped"


def test_grafana_is_provisioned_with_the_data_source_the_dashboard_names():
    source = yaml.safe_load((MONITORING / "grafana/provisioning/datasources/prometheus.yml").read_text())
    [datasource] = source["datasources"]
    assert datasource["url"] == "http://prometheus:9090" and datasource["type"] == "prometheus"
    provider = yaml.safe_load((MONITORING / "grafana/provisioning/dashboards/escoba.yml").read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    panels = json.loads(DASHBOARD.read_text())["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    for panel in panels:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == datasource["uid"] and panel["targets"], panel["title"]


def test_the_dashboard_and_the_rules_name_only_metrics_the_code_registers():
    """Every escoba_ series a query names is one that api/server/observability.py or workers/metrics.py exports."""
    import fakeredis

    from api.server.observability import Metrics
    from events.connection import from_clients
    from workers import metrics as worker_metrics

    api = Metrics()
    api.add_redis_collectors(from_clients(fakeredis.FakeRedis(server=fakeredis.FakeServer())))
    samples = [sample for registry in (api.registry, worker_metrics.REGISTRY)
               for family in registry.collect() for sample in family.samples]
    registered = {sample.name for sample in samples}
    # Prometheus sets these two on every series it scrapes: a metric's own would be renamed exported_*
    assert not any({"job", "instance"} & set(sample.labels) for sample in samples)
    used = {name for expr in dashboard_queries() + list(rule_queries().values())
            for name, _ in SELECTOR.findall(expr) if name.startswith("escoba_")}
    assert used and used <= registered, f"not registered by the code: {sorted(used - registered)}"
    # what the issue asks the dashboard to show
    shown = " ".join(dashboard_queries())
    for name in ("escoba_moves_total", "escoba_command_seconds_bucket", "escoba_http_requests_total",
                 "escoba_open_sockets", "escoba_fanout_seconds_bucket", "escoba_jobs", "escoba_job_runs_total",
                 "escoba_job_wait_seconds_bucket", "escoba_timers_due", "escoba_timers_late",
                 "escoba_schedule_failures_total", 'function="compact"', "redis_memory_used_bytes",
                 "redis_commands_processed_total", "redis_connected_slave_lag_seconds", "redis_latency_spike_last"):
        assert name in shown, name
    assert 'transport' in shown and 'route' in shown


def test_every_alert_has_a_runbook_in_the_operations_page():
    page = (ROOT / "docs" / "operations.md").read_text()
    headings = {re.sub(r"[^a-z0-9 -]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
                for line in page.splitlines() if line.startswith("#")}
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            anchor = rule["annotations"]["runbook"].split("#")[1]
            assert anchor == rule["alert"].lower() and anchor in headings, rule["alert"]
            assert rule["labels"]["severity"] in ("page", "warning")


# --- Debian's tools ---------------------------------------------------------------------------

def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it from Debian)")
    return path


@pytest.mark.parametrize("config", sorted(set(COMPOSE.values())))
def test_promtool_checks_the_prometheus_configs_and_their_rules(config):
    out = subprocess.run([_tool("promtool"), "check", "config", str(MONITORING / config)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run([_tool("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert out.returncode == 0 and f"{len(rule_queries())} rules found" in out.stdout, out.stdout + out.stderr


def test_redis_latency_spikes_fires_on_a_new_spike_in_five_scrapes_of_fifteen_minutes(tmp_path):
    """promtool's rule test: a node whose fsync stalls in every scrape, one with a new spike in five of
    them and one with four (strays) over fifteen minutes; the alert names the first two only."""
    node = 'redis_latency_spike_last{{instance="{}",event_name="{}"}}'
    scrapes = 61  # fifteen minutes of 15 s scrapes
    five = " ".join(str(100 + 10 * min(i // 12, 4)) for i in range(scrapes))  # changes at 12, 24, 36, 48
    five = five.rsplit(" ", 1)[0] + " 999"  # and a fifth in the last scrape
    four = " ".join(str(100 + 10 * min(i // 12, 4)) for i in range(scrapes))
    summary = "Redis {}: {} over 50 ms, again and again"
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "15s",
        "tests": [{
            "interval": "15s",
            "input_series": [
                {"series": node.format("redis-1:6379", "aof-fsync-always"), "values": "1000+15x60"},
                {"series": node.format("redis-2:6379", "command"), "values": five},
                {"series": node.format("redis-3:6379", "aof-fsync-always"), "values": four},
            ],
            "alert_rule_test": [{
                "eval_time": "15m",
                "alertname": "RedisLatencySpikes",
                "exp_alerts": [
                    {"exp_labels": {"severity": "warning", "instance": instance, "event_name": event},
                     "exp_annotations": {"summary": summary.format(instance, event),
                                         "runbook": "docs/operations.md#redislatencyspikes"}}
                    for instance, event in (("redis-1:6379", "aof-fsync-always"), ("redis-2:6379", "command"))
                ],
            }],
        }],
    }
    path = tmp_path / "latency_test.yml"
    path.write_text(yaml.safe_dump(tests))
    out = subprocess.run([_tool("promtool"), "test", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_escoba_unreplicated_acks_fires_on_two_minutes_of_moves_acknowledged_alone_not_on_a_failovers_burst(
        tmp_path):
    """promtool's rule test: a failover's few seconds of moves acknowledged on a master alone (until
    the spare migrates) never fire it; moves acknowledged alone for two minutes on end do."""
    series = 'escoba_unreplicated_acks_total{{instance="{}"}}'
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "15s",
        "tests": [
            {   # a burst of 12 in one scrape at 2 min (the seconds before the spare migrated), then none
                "interval": "15s",
                "input_series": [{"series": series.format("api-1:8000"), "values": "0x8 12x40"}],
                "alert_rule_test": [{"eval_time": at, "alertname": "EscobaUnreplicatedAcks", "exp_alerts": []}
                                    for at in ("2m30s", "3m", "4m", "5m", "8m")],
            },
            {   # one more every scrape from 1 min on: no spare came
                "interval": "15s",
                "input_series": [{"series": series.format("api-2:8000"), "values": "0x4 1+1x40"}],
                "alert_rule_test": [
                    {"eval_time": "2m", "alertname": "EscobaUnreplicatedAcks", "exp_alerts": []},
                    {"eval_time": "4m30s", "alertname": "EscobaUnreplicatedAcks", "exp_alerts": [
                        {"exp_labels": {"severity": "page"},
                         "exp_annotations": {
                             "summary": f"Moves are acknowledged on a master with no replica ({1 / 15}/s)",
                             "runbook": "docs/operations.md#escobaunreplicatedacks"}}]},
                ],
            },
        ],
    }
    path = tmp_path / "unreplicated_test.yml"
    path.write_text(yaml.safe_dump(tests))
    out = subprocess.run([_tool("promtool"), "test", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_amtool_checks_the_alertmanager_config():
    out = subprocess.run([_tool("amtool"), "check-config", str(MONITORING / "alertmanager.yml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


# --- for real: a server, a worker and Redis after a game, scraped ------------------------------

class _Http:
    """What tests/api/conftest.play_out needs of a client, over HTTP."""

    def __init__(self, base: str):
        self.base = base

    def call(self, method, path, body=None, token=None):
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        request = urllib.request.Request(self.base + path, method=method, headers=headers,
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def view(self, table_id, token=None):
        return self.call("GET", f"/tables/{table_id}", token=token)[1]

    def ok(self, table_id, token, **move):
        status, body = self.call("POST", f"/tables/{table_id}/moves", move, token)
        assert status == 200, body
        return body


def _started(args, env, log) -> subprocess.Popen:
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                            stdout=log, stderr=subprocess.STDOUT)


def _wait(predicate, timeout=60.0, what="it"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError, KeyError):
            if predicate():
                return
        time.sleep(0.5)
    raise AssertionError(f"waited {timeout:g} s for {what}")


def _local_prometheus_config(tmp: Path, api: int, worker: int, exporter: int, nodes: list[int]) -> Path:
    """deploy/monitoring/prometheus.yml with its jobs, paths and relabelling as they are, and the
    compose network's names replaced by this machine's ports; scraped every second."""
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "1s", "evaluation_interval": "1s"}
    config["rule_files"] = [str(RULES)]
    config.pop("alerting")
    local = {"escoba-api": [f"127.0.0.1:{api}"], "escoba-worker": [f"127.0.0.1:{worker}"],
             "redis": [f"redis://127.0.0.1:{port}" for port in nodes]}
    for job in config["scrape_configs"]:
        job.pop("dns_sd_configs", None)
        job["static_configs"] = [{"targets": local[job["job_name"]]}]
        for relabel in job.get("relabel_configs", []):
            if relabel.get("replacement") == "redis-exporter:9121":
                relabel["replacement"] = f"127.0.0.1:{exporter}"
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_every_query_of_the_dashboard_and_the_rules_finds_data_after_a_game(tmp_path):
    prometheus, exporter_bin = _tool("prometheus"), _tool("prometheus-redis-exporter")
    from ..api.conftest import play_out
    from ..redis_servers import RedisServer, free_port, redis_binary, slow_command

    if redis_binary() is None:
        pytest.skip("redis-server is not installed")
    import websocket

    redis_flags = compose("docker-compose.yml")["services"]["redis"]["command"]
    threshold = redis_flags[redis_flags.index("--latency-monitor-threshold") + 1]  # ms, as production's
    master = RedisServer(free_port(), tmp_path / "master",
                         extra=("--maxmemory", "1gb", "--latency-monitor-threshold", threshold)).start()
    replica = RedisServer(free_port(), tmp_path / "replica",
                          extra=("--replicaof", "127.0.0.1", str(master.port))).start()
    ports = {name: free_port() for name in ("api", "worker", "exporter", "prometheus")}
    env = {"REDIS_URL": master.url, "ESCOBA_BOT_DELAY": "0", "ESCOBA_RATE_LIMITS": "off"}
    log = tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    procs = []
    try:
        procs.append(_started([sys.executable, "-m", "api.cli", "serve", "--port", str(ports["api"])], env, log))
        procs.append(_started([sys.executable, "-m", "workers.cli", "worker", "--metrics-port", str(ports["worker"])],
                              env, log))
        flags = compose("docker-compose.yml")["services"]["redis-exporter"]["command"]
        procs.append(_started([exporter_bin, *flags, f"--web.listen-address=127.0.0.1:{ports['exporter']}"], {}, log))
        http = _Http(f"http://127.0.0.1:{ports['api']}")
        _wait(lambda: http.call("GET", "/healthz")[0] == 200, what="escoba serve")
        _wait(lambda: replica.client().info("replication")["master_link_status"] == "up", what="the replica")

        # a game of bots, played by the worker, watched on a socket; a game of two players over HTTP
        status, watched = http.call("POST", "/tables", {"name": "Ana", "preset": "selminha", "watch": True})
        assert status == 201, watched
        ws = websocket.create_connection(f"ws://127.0.0.1:{ports['api']}/tables/{watched['table_id']}/ws",
                                         timeout=10)
        for bot in ("carmen", "tito"):
            http.ok(watched["table_id"], watched["token"], type="add_bot", bot=bot)
        http.ok(watched["table_id"], watched["token"], type="start")
        host = http.call("POST", "/tables", {"name": "Ana", "preset": "selminha"})[1]
        guest = http.call("POST", f"/tables/{host['table_id']}/seats", {"name": "Bea"})[1]
        http.ok(host["table_id"], host["token"], type="start")
        assert http.call("POST", f"/tables/{host['table_id']}/moves", {"type": "start"}, guest["token"])[0] == 403
        assert http.call("GET", "/tables/nosuch00")[0] == 404
        play_out(http, host["table_id"], {0: host["token"], 1: guest["token"]}, random.Random(7), until="round_over")
        _wait(lambda: http.view(watched["table_id"])["status"] == "finished", timeout=120, what="the bots' game")
        ws.close()
        # a command slower than the threshold: the latency monitor's series (RedisLatencySpikes) exist
        client = master.client()
        slow_command(client, int(threshold) + 20)
        assert b"command" in [event[0] for event in client.execute_command("LATENCY", "LATEST")]
        client.close()

        config = _local_prometheus_config(tmp_path, ports["api"], ports["worker"], ports["exporter"],
                                          [master.port, replica.port])
        procs.append(_started([prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                               f"--web.listen-address=127.0.0.1:{ports['prometheus']}"], {}, log))
        api = f"http://127.0.0.1:{ports['prometheus']}/api/v1"

        def query(expr: str) -> list:
            url = f"{api}/query?" + urllib.parse.urlencode({"query": expr})
            with urllib.request.urlopen(url, timeout=10) as r:
                answer = json.loads(r.read())
            assert answer["status"] == "success", (expr, answer)
            return answer["data"]["result"]

        def targets_up() -> bool:
            with urllib.request.urlopen(f"{api}/targets", timeout=5) as r:
                active = json.loads(r.read())["data"]["activeTargets"]
            return len(active) == 4 and all(t["health"] == "up" for t in active)

        _wait(targets_up, what="every target up")
        # a few scrapes after the game, so that rates over the last minute see it
        _wait(lambda: len(query("escoba_open_sockets[1m]")[0]["values"]) >= 8, what="eight scrapes")
        http.call("GET", f"/tables/{host['table_id']}")  # and a request inside the last scrapes

        empty = [expr for expr in dashboard_queries() if not query(expr.replace("$__rate_interval", "1m"))]
        assert not empty, f"dashboard queries without data: {empty}"
        for alert, expr in rule_queries().items():
            query(expr)  # it evaluates
            missing = [s for s in selectors(expr) if not query(s)]
            assert not missing, f"{alert} names series that do not exist: {missing}"
        with urllib.request.urlopen(f"{api}/rules", timeout=5) as r:
            loaded = [rule for g in json.loads(r.read())["data"]["groups"] for rule in g["rules"]]
        assert len(loaded) == len(rule_queries()) and all(rule["health"] != "err" for rule in loaded), loaded
    except BaseException:
        log.seek(0)
        sys.stderr.write(log.read().decode(errors="replace")[-6000:])
        raise
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        replica.stop()
        master.stop()
