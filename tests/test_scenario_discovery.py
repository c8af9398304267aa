"""Scenarios are found by module: every module of emu/studies/scenarios that defines NAME."""
import sys

import pytest

from emu.studies import scenarios
from emu.studies.scenarios import common, discover, registry

STUDY = '''"""Scenario `{name}`: a study dropped into the package."""
NAME = "{name}"
DEFAULT_PROFILE = "skylake-ddr4"
METRIC = "seconds"
SENSITIVE = ()
OPTIONS = ()


def run(options):
    return {{"scenario": NAME, "profile": options.profile, "variants": {{}}}}


def table(result):
    return ""
'''


def test_the_six_studies_are_found_sorted_and_common_is_not_one():
    assert list(registry()) == ["dax-memcpy", "dax-read-copy-mc", "dax-write-usercopy",
                               "dmapool-test", "page-counter", "vhost-tx"]
    assert common not in registry().values()
    assert all(m.__name__ == f"emu.studies.scenarios.{m.NAME.replace('-', '_')}"
               for m in registry().values())


@pytest.fixture
def extra_dir(tmp_path, monkeypatch):
    """A second folder of the scenarios package: a module written there is one of its
    modules (removed from sys.modules afterwards)."""
    monkeypatch.setattr(scenarios, "__path__", list(scenarios.__path__) + [str(tmp_path)])
    yield tmp_path
    for f in tmp_path.glob("*.py"):
        sys.modules.pop(f"{scenarios.__name__}.{f.stem}", None)


def test_a_module_dropped_into_the_package_is_found(extra_dir):
    (extra_dir / "aaa_new_study.py").write_text(STUDY.format(name="aaa-new-study"))
    (extra_dir / "helpers.py").write_text('"""Not a scenario: no NAME."""\nX = 1\n')
    found = discover(scenarios.__name__, scenarios.__path__)
    assert list(found) == ["aaa-new-study", *registry()]
    assert found["aaa-new-study"].__name__ == "emu.studies.scenarios.aaa_new_study"
    assert "helpers" not in {m.__name__.rsplit(".", 1)[1] for m in found.values()}


def test_a_name_defined_twice_is_an_error(extra_dir):
    (extra_dir / "again.py").write_text(STUDY.format(name="dax-memcpy"))
    with pytest.raises(ImportError, match="'dax-memcpy'.*dax_memcpy and .*again"):
        discover(scenarios.__name__, scenarios.__path__)


def test_a_scenario_missing_part_of_the_contract_is_an_error(extra_dir):
    (extra_dir / "half.py").write_text('NAME = "half"\nMETRIC = "iops"\n')
    with pytest.raises(ImportError, match="half defines NAME but not DEFAULT_PROFILE, "
                                          "SENSITIVE, OPTIONS, run, table"):
        discover(scenarios.__name__, scenarios.__path__)
