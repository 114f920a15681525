"""A capture whose clock steps decades back (libtrace_complex.pcapng: one packet stamped
1970-01-01 among five of 2012-06-29) has no link series at 10 ms (1.3e11 bins, 999 GiB): ``fit``
and ``series`` refuse it in one line that names the capture and the span, exit 2, write nothing,
and the period the line suggests is kept by the ``--filter`` it shows."""
import pytest

from conftest import invoke, shared_path
from faultkit import one_error_line, traceflow


@pytest.mark.parametrize("command, output, extra", [
    ("fit", "m.json", []), ("fit", "m.json", ["--workers", "2"]), ("series", "s.csv", [])])
def test_decades_of_clock_step_are_refused_in_one_line(tmp_path, command, output, extra):
    capture = shared_path("formats", "libtrace_complex.pcapng")
    out = tmp_path / output
    line = one_error_line(traceflow(command, capture, "-o", out, *extra), f"{capture}: ")
    assert "1970-01-01 00:00:00.000000 UTC to 2012-06-29 07:28:25.301858 UTC" in line
    assert "1.34e+11" in line and "--filter \"ts >= TIMESTAMP '2012-06-29'\"" in line
    assert list(tmp_path.iterdir()) == []


def test_the_suggested_period_makes_a_series(tmp_path):
    capture = shared_path("formats", "libtrace_complex.pcapng")
    res = invoke("series", capture, "-o", tmp_path / "s.csv", "--filter",
                 "ts >= TIMESTAMP '2012-06-29'")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s.csv").read_text().splitlines()[1:] == [
        "2012-06-29T07:28:25.298858+00:00,1120,4"]
