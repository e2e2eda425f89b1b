"""Calibration from a contact log: simulate a log from a known scenario, calibrate, recover each parameter."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from extras import need

import csr_marl
from csr_marl.cli import app
from csr_marl.whatif import StudyError
from csr_marl.whatif.calibrate import Contact, calibrate, fit_handle_times, fit_patience, read_contact_log

need("scipy")
runner = CliRunner()
PROFILE = [[0, 90], [120, 150], [240, 60]]
TRUTH = {
    "horizon_minutes": 360, "warmup_minutes": 0, "arrivals": {"profile": PROFILE}, "staffing.resolver": 5,
    "customers.patience": {"dist": "exponential", "mean_minutes": 3.0},
    "customers.tier_mix": {"basic": 0.6, "premium": 0.3, "enterprise": 0.1},
}
DAYS = 10


# One worker runs this module, so its module-scoped fixtures are built once.
pytestmark = pytest.mark.xdist_group("calibrate")


def simulated_log(path: Path) -> Path:
    """A contact log of ``DAYS`` simulated days of ``TRUTH``, in the calibrate format."""
    rows = []
    for day in range(DAYS):
        for record in csr_marl.simulate("validation/mmc", "expert", seed=day, overrides=TRUTH, log=True).log:
            rows.append({
                "day": day, "arrival": record["arrival"], "answered": "" if record["answered_at"] is None else record["answered_at"],
                "end": record["end"], "abandoned": int(record["outcome"] == "abandoned"), "tier": record["tier"],
                "category": record["category"],
            })
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def log_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return simulated_log(tmp_path_factory.mktemp("calibrate") / "contacts.csv")


def test_round_trip_recovers_every_parameter_within_its_ci(log_file: Path) -> None:
    fit = calibrate(read_contact_log(log_file), 30)
    assert fit.days == DAYS and fit.horizon_minutes == 360
    for k, rate in enumerate(fit.arrival_rates):
        true = next(r for start, r in reversed(PROFILE) if start <= k * 30)
        assert rate.low <= true <= rate.high, (k, rate, true)
    handle = fit.handle["resolver"]
    assert handle.mean.low <= 1.6 <= handle.mean.high
    assert handle.dist in ("exponential", "gamma") and handle.cv == pytest.approx(1.0, abs=0.05)
    assert handle.ks_p_value > 0.01
    patience = fit.patience.mean_exponential
    assert patience is not None and patience.low <= 3.0 <= patience.high
    for tier, share in TRUTH["customers.tier_mix"].items():
        assert fit.tier_mix[tier].low <= share <= fit.tier_mix[tier].high


def test_censoring_is_what_makes_patience_right(log_file: Path) -> None:
    contacts = read_contact_log(log_file)
    naive = np.mean([c.end - c.arrival for c in contacts if c.abandoned])
    assert naive < 0.8 * 3.0  # only the impatient hang up before an answer: their mean is biased low
    patience = fit_patience(contacts)
    # Kaplan-Meier where ~200 customers are still waiting (few wait longer: its tail is thin).
    assert patience.survival_at(1.0) == pytest.approx(math.exp(-1.0 / 3.0), abs=0.05)


def test_kaplan_meier_without_censoring_is_the_empirical_survival() -> None:
    contacts = [Contact("0", 0.0, None, t, True, "resolver", None, None) for t in (1.0, 2.0, 2.0, 4.0)]
    fit = fit_patience(contacts)
    assert fit.km_times == [1.0, 2.0, 4.0] and fit.km_survival == pytest.approx([0.75, 0.25, 0.0])
    assert fit.mean_exponential is not None and fit.mean_exponential.value == pytest.approx(9.0 / 4)


def test_lognormal_handle_times_are_told_apart() -> None:
    rng = np.random.default_rng(3)
    fit = fit_handle_times("resolver", rng.lognormal(1.0, 0.6, 3_000))
    assert fit.dist == "lognormal" and fit.aic["lognormal"] < fit.aic["exponential"]


def test_iso_timestamps_and_bad_lines(tmp_path: Path) -> None:
    good = tmp_path / "stamped.csv"
    good.write_text("arrival,answered,end,abandoned\n2024-03-01T08:00:00,2024-03-01T08:01:00,2024-03-01T08:04:00,0\n"
                    "2024-03-02T08:30:00,,2024-03-02T08:32:00,1\n")
    contacts = read_contact_log(good, opens_at="08:00")
    assert [c.day for c in contacts] == ["2024-03-01", "2024-03-02"]
    assert contacts[0].arrival == 0 and contacts[0].answered == 1 and contacts[1].arrival == 30
    own = read_contact_log(good)  # no stated opening: each day from its own first arrival's interval
    assert own[1].arrival == 0 and own[1].day_start == 8 * 60 + 30
    with pytest.raises(StudyError, match="before the opening time 08:15"):
        read_contact_log(good, opens_at="08:15")
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival,answered,end,abandoned\n1,2,3,0\n5,4,9,0\n")
    with pytest.raises(StudyError, match="line 3"):
        read_contact_log(bad)


def test_calibrate_command_writes_a_scenario_that_runs(log_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "calibrated.yaml"
    result = runner.invoke(app, ["calibrate", str(log_file), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "goodness of fit" in result.output and "Kaplan-Meier" in result.output
    scenario = csr_marl.load_scenario(out)
    assert scenario.customers.patience is not None and scenario.arrivals.profile is not None
    assert csr_marl.simulate(scenario, "expert", seed=0).kpis["offered"] > 0


def test_calibrate_command_refuses_bad_input_without_writing(tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("arrival,end\n1,2\n")
    out = tmp_path / "x.yaml"
    result = runner.invoke(app, ["calibrate", str(log), "--out", str(out)])
    assert result.exit_code == 2 and "no column answered, abandoned" in result.output
    assert not out.exists()


def _log(path: Path, rows: list[str], header: str = "arrival,answered,end,abandoned") -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _minutes_rows(count: int = 30, handle: float | None = None) -> list[str]:
    """``count`` answered contacts, one a minute, handle times varied (or all ``handle``)."""
    return [f"{k},{k + 0.5},{k + 0.5 + (handle if handle is not None else 1 + k % 7)},0" for k in range(count)]


def _refused(args: list[str], *named: str) -> str:
    result = runner.invoke(app, ["calibrate", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    for word in named:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def test_offsets_are_normalised_to_utc(tmp_path: Path) -> None:
    rows = [f"2024-05-01T09:{k:02d}:00Z,2024-05-01T09:{k:02d}:30Z,2024-05-01T09:{k + 1:02d}:30Z,0" for k in range(10)]
    rows += [f"2024-05-01T11:{k:02d}:00+02:00,,2024-05-01T11:{k:02d}:30+02:00,1" for k in range(10, 20)]
    contacts = read_contact_log(_log(tmp_path / "zones.csv", rows))
    assert {c.day for c in contacts} == {"2024-05-01"}
    assert [c.arrival for c in contacts] == [float(k) for k in range(20)]  # 11:10+02:00 is 09:10 UTC


def test_a_log_mixing_zoned_and_unzoned_times_is_refused(tmp_path: Path) -> None:
    rows = _minutes_rows(0) + ["2024-05-01T09:00:00,,2024-05-01T09:01:00,1", "2024-05-01T09:02:00+05:00,,2024-05-01T09:03:00+05:00,1"]
    _refused([str(_log(tmp_path / "mixed.csv", rows)), "--out", str(tmp_path / "s.yaml")], "mixed.csv line 3", "offset")
    assert not (tmp_path / "s.yaml").exists()


@pytest.mark.parametrize("category", ["x\nwarmup_minutes: 5\nmax_tickets: 1\n#", "\x1b[31mred", "a" * 101])
def test_category_text_never_reaches_the_yaml_or_the_terminal(tmp_path: Path, category: str) -> None:
    rows = [f'{k},{k + 0.5},{k + 1.5 + k % 3},0,"{category}"' for k in range(30)]
    log = _log(tmp_path / "cats.csv", rows, "arrival,answered,end,abandoned,category")
    line = _refused([str(log), "--out", str(tmp_path / "s.yaml")], "cats.csv line 2", "category")
    assert "\x1b" not in line and not (tmp_path / "s.yaml").exists()


@pytest.mark.parametrize("arrival", ["1e9", "20000"])
def test_a_time_past_a_week_is_refused(tmp_path: Path, arrival: str) -> None:
    log = _log(tmp_path / "far.csv", _minutes_rows() + [f"{arrival},,{arrival},1"])
    _refused([str(log), "--out", str(tmp_path / "s.yaml")], "far.csv line 32", "arrival")


@pytest.mark.parametrize("horizon", ["1e12", "inf", "nan", "0", "-5"])
def test_horizon_is_bounded(tmp_path: Path, horizon: str) -> None:
    log = _log(tmp_path / "ok.csv", _minutes_rows())
    _refused([str(log), "--out", str(tmp_path / "s.yaml"), "--horizon", horizon], "--horizon")


def test_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    log = tmp_path / "excel.csv"
    log.write_bytes(b"\xef\xbb\xbf" + _log(tmp_path / "plain.csv", _minutes_rows()).read_bytes())
    assert len(read_contact_log(log)) == 30


def test_a_huge_field_and_bad_utf8_name_the_file(tmp_path: Path) -> None:
    huge = _log(tmp_path / "huge.csv", _minutes_rows() + ["1,2,3," + "x" * 140_000])
    _refused([str(huge), "--out", str(tmp_path / "s.yaml")], "huge.csv line 32")
    binary = tmp_path / "latin.csv"
    binary.write_bytes(b"arrival,answered,end,abandoned\n1,2,3,0\n\xff\xfe,1,2,0\n")
    _refused([str(binary), "--out", str(tmp_path / "s.yaml")], "latin.csv", "UTF-8")


def test_identical_handle_times_give_a_deterministic_fit(tmp_path: Path) -> None:
    out = tmp_path / "s.yaml"
    result = runner.invoke(app, ["calibrate", str(_log(tmp_path / "same.csv", _minutes_rows(handle=2.0))), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert csr_marl.load_scenario(out).handle_times.tools["respond_user"].dist == "deterministic"


def test_out_is_not_replaced_without_force(tmp_path: Path) -> None:
    log = _log(tmp_path / "ok.csv", _minutes_rows())
    out = tmp_path / "s.yaml"
    out.write_text("mine\n")
    _refused([str(log), "--out", str(out)], "--out", "--force")
    assert out.read_text() == "mine\n"
    result = runner.invoke(app, ["calibrate", str(log), "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert csr_marl.load_scenario(out).arrivals.profile is not None


def test_many_days_calibrate_in_linear_time(tmp_path: Path) -> None:
    """30,000 days of one contact each: the per-day work is one pass, not a pass per day."""
    rows = [f"{k},{k % 60},{k % 60 + 0.2},{k % 60 + 1 + k % 5},0" for k in range(30_000)]
    contacts = read_contact_log(_log(tmp_path / "days.csv", rows, "day,arrival,answered,end,abandoned"))
    fit = calibrate(contacts, 30)
    assert fit.days == 30_000 and fit.peak_in_service == 1


def stamped_log(path: Path, early: str | None = None) -> Path:
    """Five days of 40 contacts from 08:05 every 6 minutes; ``early`` adds one contact at that time on day 3."""
    from datetime import datetime, timedelta

    lines = ["arrival,answered,end,abandoned"]
    for day in range(1, 6):
        opening = datetime(2024, 3, day, 8, 5)
        times = [opening + timedelta(minutes=6 * k) for k in range(40)]
        if early and day == 3:
            times.insert(0, datetime.fromisoformat(f"2024-03-03T{early}"))
        for k, t in enumerate(times):
            lines.append(f"{t.isoformat()},{t.isoformat()},{(t + timedelta(minutes=1 + k % 5)).isoformat()},0")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_one_early_contact_moves_no_day_and_counts_in_the_first_interval(tmp_path: Path) -> None:
    plain_log = read_contact_log(stamped_log(tmp_path / "a.csv"))
    early_log = read_contact_log(stamped_log(tmp_path / "b.csv", "07:10"))
    # Every day, day 3 included, keeps its minutes: the opening is the one most days share (08:00).
    # (Counting each day from its own first contact moved day 3 by an hour.)
    extra = [c for c in early_log if c.early > 0]
    assert [(c.day, c.arrival, c.early) for c in extra] == [("2024-03-03", 0.0, 50.0)]
    assert [(c.day, c.arrival) for c in plain_log] == [(c.day, c.arrival) for c in early_log if c.early == 0]
    assert plain_log[0].arrival == 5 and {c.day_start for c in early_log} == {8 * 60}
    assert extra[0].end - extra[0].answered == 1  # its handle time is kept
    plain, early = calibrate(plain_log, 30), calibrate(early_log, 30)
    assert plain.opens_at == early.opens_at == "08:00"
    # The profile moves in the first interval only, by one contact over five days (0.4 an hour).
    moved = [b.value - a.value for a, b in zip(plain.arrival_rates, early.arrival_rates)]
    assert moved[0] == pytest.approx(0.4) and all(m == 0 for m in moved[1:])
    assert any("1 contact(s) on 1 day(s) arrived before the 08:00 opening" in note for note in early.notes)


def test_rate_cis_are_exact_poisson_printed_and_in_json(log_file: Path, tmp_path: Path) -> None:
    import json

    from scipy import stats

    fit = calibrate(read_contact_log(log_file), 30)
    first = fit.arrival_rates[0]
    count = round(first.value * fit.days / 2)  # contacts per hour -> count over the days
    assert first.low == pytest.approx(stats.chi2.ppf(0.025, 2 * count) / 2 * 2 / fit.days)
    assert first.high == pytest.approx(stats.chi2.ppf(0.975, 2 * count + 2) / 2 * 2 / fit.days)
    out = tmp_path / "c.yaml"
    shown = runner.invoke(app, ["calibrate", str(log_file), "--out", str(out)])
    assert f"00:00 {first.value:.1f} [{first.low:.1f}, {first.high:.1f}]" in shown.output
    payload = json.loads(runner.invoke(app, ["calibrate", str(log_file), "--out", str(out), "--json", "--force"]).stdout)
    rate = payload["estimates"]["arrival_rates_per_hour"][0]
    assert (rate["value"], rate["low"], rate["high"]) == pytest.approx((first.value, first.low, first.high))


def test_kpis_with_parameter_uncertainty_are_reproducible_on_any_workers(log_file: Path, tmp_path: Path) -> None:
    from csr_marl.whatif.calibrate import calibration_overrides
    from csr_marl.whatif.parameter_uncertainty import kpis_with_parameter_uncertainty

    fit = calibrate(read_contact_log(log_file), 30)
    scenario = csr_marl.load_scenario("validation/mmc", {**calibration_overrides(fit), "horizon_minutes": 240})
    both = kpis_with_parameter_uncertainty(scenario, fit, 12, seed=0, workers=1)
    assert both == kpis_with_parameter_uncertainty(scenario, fit, 12, seed=0, workers=2)
    fixed, drawn = both["fixed"]["service_level"], both["drawn"]["service_level"]
    assert 0 <= drawn.low <= drawn.high <= 1 and drawn.n == fixed.n == 12 and drawn != fixed


def test_parameter_draws_spread_as_the_fitted_uncertainty(log_file: Path) -> None:
    from csr_marl.whatif.parameter_uncertainty import parameter_draw

    fit = calibrate(read_contact_log(log_file), 30)
    rng = np.random.default_rng(0)
    draws = [parameter_draw(fit, "resolver", rng) for _ in range(2_000)]
    rates = np.array([[rate for _, rate in d["arrivals"]["profile"]] for d in draws])
    counts = np.array([r.value for r in fit.arrival_rates]) * fit.days / 2  # contacts per interval, all days
    # Poisson: the rate's standard error is sqrt(count) / days, in contacts per hour x 2.
    assert rates.std(axis=0) == pytest.approx(np.sqrt(counts + 0.5) / fit.days * 2, rel=0.08)
    assert rates.mean(axis=0) == pytest.approx((counts + 0.5) / fit.days * 2, rel=0.02)
    handle = np.array([d["handle_times.tools.respond_user"]["mean_minutes"] for d in draws])
    se = (fit.handle["resolver"].mean.high - fit.handle["resolver"].mean.low) / (2 * 1.96)
    assert handle.mean() == pytest.approx(fit.handle["resolver"].mean.value, abs=3 * se / np.sqrt(2_000))
    assert handle.std() == pytest.approx(se, rel=0.08)


def test_the_drawn_interval_keeps_the_parameters_spread_whatever_the_replications() -> None:
    from csr_marl.analysis.stats import t_quantile
    from csr_marl.whatif.parameter_uncertainty import _with_parameter_spread

    rng = np.random.default_rng(7)
    for n in (40, 400):
        # Run noise sd 1 in both columns; the drawn parameters add sd 2 to the drawn runs' KPI.
        fixed = [{"asa_minutes": 10 + x} for x in rng.normal(0, 1, n)]
        drawn = [{"asa_minutes": 10 + x + p} for x, p in zip(rng.normal(0, 1, n), rng.normal(0, 2, n))]
        e = _with_parameter_spread(fixed, drawn, ["asa_minutes"])["asa_minutes"]
        # About t * sqrt(4 + 5 / n): near 3.9 at any n, where the mean's CI would be 0.7 at 40 and 0.2 at 400.
        assert 3.2 < e.high - e.mean < 4.6 and e.mean - e.low == pytest.approx(e.high - e.mean)
    same = [{"service_level": v} for v in rng.uniform(0.7, 0.9, 40)]
    plain = _with_parameter_spread(same, same, ["service_level"])["service_level"]  # no spread added: the t CI
    values = np.array([r["service_level"] for r in same])
    assert plain.high - plain.mean == pytest.approx(t_quantile(0.975, 39) * values.std(ddof=1) / np.sqrt(40))
    wide = _with_parameter_spread(same, [{"service_level": v} for v in rng.uniform(0.0, 1.0, 40)], ["service_level"])
    assert 0.0 <= wide["service_level"].low and wide["service_level"].high <= 1.0  # clipped to where a share lies
