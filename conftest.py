"""The repository's own pytest settings beyond pyproject.toml.

``--doctest-modules`` runs the engine's docstring examples (testpaths: tests, engine). The two
modules mypyc compiles (setup.py) are imported as their extensions, which pytest cannot match
to their source file; they hold no examples, so they are not collected.

Every test carries exactly one tier (issue 58; ``.ci/run`` runs ``-m unit`` first, then the rest):

- ``deploy``: everything under ``tests/deploy`` (the compose files, the package, the monitoring);
- ``browser``: a test that drives Debian's chromium (marked ``browser``, or asks for the ``browser``
  fixture);
- ``integration``: a test that needs a process of the suite's own (a real Redis, a cluster, ``escoba
  serve``, a bench run): marked ``integration``, or asking for a fixture that starts one;
- ``unit``: the rest, in this process on fakeredis; a unit test that starts a redis-server fails
  (``tests/redis_servers.py``), so a test that needs one cannot be left in the fast tier unmarked.

The tiers are given here, at collection, by the directory, the marks and the fixtures a test asks
for, so a new test is never forgotten; ``tests/test_tiers.py`` holds every collected test to one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

collect_ignore = ["engine/bots/sim.py", "engine/bots/people.py"]

TIERS = ("unit", "integration", "browser", "deploy")
ROOT = Path(__file__).resolve().parent
DEPLOY = ROOT / "tests" / "deploy"
BENCH = ROOT / "tests" / "bench"
# fixtures (tests/conftest.py) that start a Redis, a cluster or a served app of the suite's own
SERVERS = frozenset({"redis_server", "real_redis", "redis_cluster", "queue_server", "replicated", "topology",
                     "backends", "stores", "tables", "redis_server_binary"})
# each collected test's node id and tier marks, before any -m deselected one (tests/test_tiers.py)
TIER_MARKS = pytest.StashKey[list]()


def tier_of(item: pytest.Item) -> str:
    """The tier ``item`` belongs in, by where it is, its marks and its fixtures."""
    path = Path(str(item.path))
    marks = {m.name for m in item.iter_markers()}
    if path.is_relative_to(DEPLOY):
        return "deploy"
    if "browser" in marks or "browser" in getattr(item, "fixturenames", ()):
        return "browser"
    # bench/'s tests run the benches, which start redis-servers and served apps of their own
    if "integration" in marks or SERVERS.intersection(getattr(item, "fixturenames", ())) or path.is_relative_to(BENCH):
        return "integration"
    return "unit"


@pytest.hookimpl(tryfirst=True)  # before -m deselects: the tier marks are what it selects by
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        tier = tier_of(item)
        if tier not in {m.name for m in item.iter_markers()}:
            item.add_marker(tier)
    # a list, not a dict: schemathesis's tests of each operation share one node id
    config.stash[TIER_MARKS] = [(item.nodeid, [m.name for m in item.iter_markers() if m.name in TIERS])
                                for item in items]


class TierTimes:
    """What each tier cost, said at the end of a run: setup, call and teardown summed over the
    processes (test seconds, not the run's wall time)."""

    def __init__(self) -> None:
        self.spent: dict[str, list[float]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tier = next((t for t in TIERS if t in report.keywords), None)
        if tier is not None:
            tests, seconds = self.spent.setdefault(tier, [0, 0.0])
            self.spent[tier] = [tests + (report.when == "call"), seconds + report.duration]

    def pytest_terminal_summary(self, terminalreporter) -> None:
        said = [f"{tier} {self.spent[tier][0]} tests {self.spent[tier][1]:.0f} s" for tier in TIERS
                if tier in self.spent]
        if said:
            terminalreporter.write_line("time by tier, summed over the processes: " + "; ".join(said))


# the order a run takes its tests in: the fast tier first (a broken rule fails early), then the
# slowest tests, so that the processes end together (xdist hands tests out in this order, and the
# last one to start holds up the run's end)
RUN_ORDER = ("unit", "browser", "deploy", "integration")


class TierOrder:
    @pytest.hookimpl(trylast=True)  # after pytest grouped tests by their fixtures' parameters
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        def rank(item: pytest.Item) -> int:
            return next(RUN_ORDER.index(m.name) for m in item.iter_markers() if m.name in RUN_ORDER)

        items.sort(key=rank)  # stable: each module's tests stay together, in their order


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(TierOrder(), "tier-order")
    if not hasattr(config, "workerinput"):  # xdist's controller hears every worker's reports
        config.pluginmanager.register(TierTimes(), "tier-times")
