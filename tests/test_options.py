"""A scenario's options, declared once (emu.studies.options.Option): their check, and the Python
API made from them (emu.studies.run) against `emu run --json` and its errors."""
import json

import pytest

from emu import studies
from emu.studies import api, scenarios, sweep
from emu.studies.cli import main
from emu.studies.options import CliError, Option, OptionError, Options, resolve

RANGED = Option("n", int, 5, "n", low=1, high=10)


def test_a_flag_is_the_name_with_dashes_a_true_bool_its_negation():
    assert Option("file_size", int, 1, "").flag == "--file-size"
    assert Option("fast_forward", bool, True, "").flag == "--no-fast-forward"
    assert Option("no_readings", bool, False, "").flag == "--no-readings"


@pytest.mark.parametrize("option, text, value", [
    (RANGED, "0x3", 3), (RANGED, "10", 10),
    (Option("f", float, 1.0, "", low=0, high=1, low_open=True), "1", 1.0),
    (Option("s", str, "a", "", choices=("a", "b")), "b", "b"),
])
def test_parse_takes_the_command_lines_text(option, text, value):
    assert option.parse(text) == value and type(option.parse(text)) is type(value)


@pytest.mark.parametrize("option, text, reason", [
    (RANGED, "0", "must be an integer of at least 1 and at most 10, not 0"),
    (RANGED, "x", "invalid int value: 'x'"),
    (Option("f", float, 1.0, "", low=0, high=1, low_open=True), "0",
     "must be a fraction in (0, 1], not 0"),
    (Option("f", float, 1.0, "", low=0, high=1, low_open=True), "nan",
     "must be a fraction in (0, 1], not nan"),
    (Option("s", str, "a", "", choices=("a", "b")), "c",
     "invalid choice: 'c' (choose from 'a', 'b')"),
    (Option("f", float, 4.0, "", low=2, high=8), "9", "must be a number in [2, 8], not 9"),
    (Option("b", bool, False, ""), "1", "--b is a flag: it takes no value"),
])
def test_parse_refuses_with_one_reason(option, text, reason):
    with pytest.raises(OptionError) as e:
        option.parse(text)
    assert str(e.value) == reason


@pytest.mark.parametrize("value, reason", [
    (0, "must be an integer of at least 1 and at most 10, not 0"),
    (2.0, "must be an integer of at least 1 and at most 10, not 2.0"),
    ("3", "must be an integer of at least 1 and at most 10, not '3'"),
    (True, "must be an integer of at least 1 and at most 10, not True"),
    (None, "must be an integer of at least 1 and at most 10, not None"),
])
def test_check_takes_typed_values_only(value, reason):
    with pytest.raises(OptionError) as e:
        RANGED.check(value)
    assert str(e.value) == reason


def test_check_widens_an_int_for_a_float_and_a_none_default_takes_none():
    assert Option("f", float, 1.0, "").check(2) == 2.0
    assert type(Option("f", float, 1.0, "").check(2)) is float
    assert Option("p", int, None, "", low=0).check(None) is None


def test_a_bad_declaration_fails_when_the_module_loads():
    with pytest.raises(TypeError, match="option n: default 0: must be an integer of at least 1"):
        Option("n", int, 0, "", low=1)
    with pytest.raises(TypeError, match="'file-size'"):
        Option("file-size", int, 1, "")
    with pytest.raises(TypeError, match="'l'"):
        Option("l", list, [], "")
    with pytest.raises(TypeError, match="'profile': a name the options use themselves"):
        Option("profile", str, "x", "")


def test_resolve_fills_the_defaults_and_names_the_option():
    assert resolve((RANGED, Option("m", str, "x", "")), {"m": "y"}, "s") == {"n": 5, "m": "y"}
    with pytest.raises(OptionError, match=r"^s: option n: must be an integer of at least 1 and "
                                          r"at most 10, not 11$"):
        resolve((RANGED,), {"n": 11}, "s")
    with pytest.raises(OptionError, match=r"^s: no option 'k' \(options: n\)$"):
        resolve((RANGED,), {"k": 1}, "s")


def test_options_read_as_attributes():
    o = Options("p", {}, {"ios": 3})
    assert (o.profile, o.ios, o.progress) == ("p", 3, False)
    with pytest.raises(AttributeError, match="no option 'bs'"):
        o.bs


def test_every_studys_options_are_the_command_lines():
    """Each declared option is an argument of `emu run NAME` with its default (argparse's
    own parse of an empty command line), and nothing else is."""
    from emu.studies.cli import build_parser
    parser = build_parser()
    for name, mod in scenarios.registry().items():
        args = vars(parser.parse_args(["run", name]))
        own = {k: v for k, v in args.items() if k not in (
            "command", "scenario", "profile", "overrides", "json", "quiet", "sensitivity",
            "stat")}
        assert own == {o.name: o.default for o in api.run_options(mod)}, name


def test_the_api_without_argv_equals_emu_run_json(capsys):
    over = {"media.optane.read_latency_ns": 400.0}
    got = studies.run("dax-write-usercopy", ios=200, overrides=over)
    assert main(["run", "dax-write-usercopy", "--ios", "200", "--set",
                 "media.optane.read_latency_ns=400.0", "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert got == want
    assert want["ios"] == 200 and want["overrides"] == over and "readings" in want
    # an Options object, as a notebook would keep it, gives the same
    opts = api.options_for("dax-write-usercopy", {"ios": 200}, overrides=over)
    assert studies.run("dax-write-usercopy", opts) == want


def test_the_api_with_sensitivity_and_without_readings_equals_emu_run(capsys):
    got = studies.run("vhost-tx", {"packets": 64}, no_readings=True,
                      sensitivity=["software.tun_xdp_ns"])
    assert main(["run", "vhost-tx", "--packets", "64", "--no-readings", "--sensitivity",
                 "software.tun_xdp_ns", "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    assert got == want and "readings" not in want
    assert list(want["sensitivity"]) == ["software.tun_xdp_ns"]


@pytest.mark.parametrize("call, message", [
    (lambda: studies.run("vhost-tx", packets=0),
     "vhost-tx: option packets: must be an integer of at least 1 and at most 100000, not 0"),
    (lambda: studies.run("vhost-tx", packets="64"),
     "vhost-tx: option packets: must be an integer of at least 1 and at most 100000, not '64'"),
    (lambda: studies.run("vhost-tx", desc_copy="inline"),
     "vhost-tx: option desc_copy: invalid choice: 'inline' (choose from 'inlined', 'call')"),
    (lambda: studies.run("vhost-tx", pkts=64),
     "vhost-tx: no option 'pkts' (options: no_readings, packets, pkt_bytes, guest, desc_copy)"),
    (lambda: studies.run("no-such"), "unknown scenario 'no-such' (scenarios: dax-memcpy, "
                                     "dax-read-copy-mc, dax-write-usercopy, dmapool-test, "
                                     "page-counter, vhost-tx)"),
    (lambda: studies.run("vhost-tx", sensitivity=["core.no_such"]),
     "--sensitivity core.no_such: profile 'broadwell-ddr4' has no such key"),
])
def test_a_bad_value_through_the_api_is_one_error_naming_the_option(call, message, monkeypatch):
    def ran(options):
        raise AssertionError("ran")
    for mod in scenarios.registry().values():
        monkeypatch.setattr(mod, "run", ran)
    with pytest.raises(OptionError) as e:
        call()
    assert str(e.value) == message


def test_the_command_line_and_the_sweep_give_the_apis_reason(capsys, tmp_path):
    reason = "must be an integer of at least 1 and at most 100000, not 0"
    assert main(["run", "vhost-tx", "--packets", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"emu: error: run vhost-tx: argument --packets: {reason} (see: ")
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nscenario = "vhost-tx"\n[options]\npackets = [0]\n')
    with pytest.raises(CliError) as e:
        sweep.load_spec(str(spec))
    assert str(e.value) == (f"{spec}: options.packets = 0: run vhost-tx: argument --packets: "
                            f"{reason}")


def test_a_sweep_points_configuration_is_every_option_by_name(tmp_path):
    """The id's "options": each declared option by name at its default unless swept (the
    dax-write-usercopy defaults of its docstring and docs/scenarios.md: 4 KiB, one job, 20000
    I/Os, a 1 GiB file), as before the options were declared."""
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\nscenario = "dax-write-usercopy"\n[options]\nios = [2000]\n')
    (p,) = sweep.load_spec(str(spec)).points
    assert json.loads(p.config) == {
        "scenario": "dax-write-usercopy", "profile": "cascadelake-optane", "overrides": {},
        "options": {"bs": 4096, "jobs": 1, "cores": 1, "ios": 2000, "file_size": 1 << 30,
                    "no_readings": False}}
