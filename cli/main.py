"""The ``traceflow`` command.

Subcommands live one per module in this package (``traceflow.cli.<name>``, attribute ``command``)
and are imported only when invoked, so ``traceflow --help`` does not pay for Polars or the simulator.
User errors, outputs that cannot be written and running out of memory print one line on stderr
and exit 2; no traceback. Warnings (:class:`traceflow.errors.TraceflowWarning`) print one line
each on stderr, every time they occur.

Shell completion (bash, zsh, fish) comes from Click: ``eval "$(_TRACEFLOW_COMPLETE=bash_source
traceflow)"`` (``zsh_source``, ``fish_source``).
"""
import importlib
import os
import sys
import warnings

import click

from traceflow import __version__
from traceflow.cli import guard
from traceflow.errors import (WRITE_ERRNOS, TraceflowError, TraceflowWarning, exhaustion,
                              memory_limit, out_of_memory)
from traceflow.scale.memory import one_arena, reserve_blas_buffer
from traceflow.suggest import did_you_mean

LOST = "an allocation failed where it could not be reported"
#: what Click >= 8.2 raises for a bare ``traceflow`` (8.1 printed the help and exited 0 itself)
NoArgsIsHelp = getattr(click.exceptions, "NoArgsIsHelpError", ())

COMMANDS = {
    "info": "Summarize captures like capinfos: format, link types, packets, bytes, span.",
    "ingest": "Decode pcap/pcapng captures into a packets table (Parquet/Arrow).",
    "flows": "Build the TCP/UDP flow table from captures or a packets table.",
    "rtt": "Passive path RTTs: per path, distribution, spectrum and classes.",
    "series": "Bin packets into a link time series (bytes, packets per bin).",
    "tail": "Heavy-tail fits (Pareto MLE, Hill, chi-square, likelihood ratios).",
    "hurst": "Hurst exponent by V-T, R/S, wavelet, Whittle, DFA, periodogram.",
    "levels": "Conditional traffic-level tables Pr{L2|L1} and E[L2|L1].",
    "dispersion": "Index of dispersion across time scales and c.o.v.",
    "fit": "Fit a replayable traffic model (model.json) to captures.",
    "simulate": "Run a scenario in the packet-level simulator.",
    "replay": "Replay a fitted model or a flows table through the simulator.",
    "compare": "Compare predicted against measured traffic.",
    "report": "Write an HTML report with figures.",
    "reproduce": "Reproduce an experiment of the source papers.",
    "sweep": "Run a parameter sweep on a local pool or a Dask cluster.",
    "datasets": "List, verify and locate registered datasets.",
    "scenarios": "List and show the bundled scenarios (simulate/sweep take them by name).",
    "testbed": "Real-kernel TCP captures with ground truth and real RTTs (root, Linux).",
    "demo": "End-to-end demo on the bundled sample: ingest, fit, replay, compare, report.",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(f"traceflow.cli.{name}")
        return module.command

    def resolve_command(self, ctx, args):
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            ctx.fail(f"no such command {args[0]!r}{did_you_mean(args[0], COMMANDS)}; "
                     "traceflow --help lists them")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        """Run the command; a reader that stops reading (``traceflow flows ... -o - | head``)
        ends it quietly with status 0, as for any Unix filter."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # stdout's unflushed rest would fail again at exit: send it nowhere
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0

    def format_commands(self, ctx, formatter):
        # Short help from the table above, so listing commands imports nothing.
        rows = [(name, COMMANDS[name]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="traceflow")
def cli():
    """traceflow: trace analytics and replay toolkit for network researchers.

    \b
    Examples:
      traceflow demo
      traceflow info trace.pcap
      traceflow flows trace.pcap -o flows.csv
      traceflow fit trace.pcap -o model.json && traceflow replay model.json -o run/

    Shell completion: eval "$(_TRACEFLOW_COMPLETE=bash_source traceflow)" (or zsh_source,
    fish_source), e.g. in ~/.bashrc.
    """
    warnings.simplefilter("always", TraceflowWarning)
    warnings.showwarning = _show_warning


_default_showwarning = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None):
    """TraceflowWarnings as one line on stderr; other warnings as Python prints them."""
    if issubclass(category, TraceflowWarning):
        click.echo(f"traceflow: warning: {message}", err=True)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


def _fail(message, code):
    guard.report_error(message)
    return code


#: an allocation failed where it could not raise (:func:`_unraisable`)
_lost_memory = False


def _unraisable(info):
    """``sys.unraisablehook``: a MemoryError raised where it cannot propagate (a destructor, a C
    callback) is not printed (CPython prints one per failed call: 419 lines in one CI run) but
    remembered, and :func:`main` reports it in the command's one line."""
    global _lost_memory
    if info.exc_type is not None and issubclass(info.exc_type, MemoryError):
        _lost_memory = True
        return
    sys.__unraisablehook__(info)


def _prepare_for_memory_limit():
    """Under an address-space limit (``ulimit -v``), make running out fail, and fail loudly.

    OpenBLAS retries a buffer it cannot map forever, at full CPU (seen with scipy's OpenBLAS
    0.3.31 in its threads, when it is loaded, and in scikit-learn's k-means in ``fit``): BLAS
    and OpenMP run on one thread there, and BLAS maps its buffer at the start
    (:func:`traceflow.scale.memory.reserve_blas_buffer`) or the command fails there. Polars
    turns a binary it cannot load into a warning and a NameError later: the warning becomes
    the error. Rust prints a panic's backtrace when ``RUST_BACKTRACE`` is set (it is on the CI
    machines); when Polars panics for want of memory (its runtime cannot start a thread),
    symbolizing that backtrace allocates, fails, and the allocation-error hook waits for the
    backtrace lock the printing holds: ``fit`` at 650 MiB hung in 1 run of 3. Backtraces are
    off, then (the guard shows the panic in one line anyway)."""
    if memory_limit() is not None:
        os.environ["RUST_BACKTRACE"] = "0"
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        reserve_blas_buffer()
        warnings.filterwarnings("error", message="Polars binary is missing", category=UserWarning)


def main(argv=None):
    """Console-script entry point; exits with the command's status (2 for any user error).

    Run as the ``traceflow`` command (``argv`` None), the command runs under :mod:`.guard`, which
    turns native aborts (a failed allocation in Polars) into one line as well.
    """
    if argv is None and guard.wanted():
        code = guard.supervise()
        if code is not None:  # the guard, after the command ran in its child
            sys.exit(code)
    one_arena()
    sys.unraisablehook = _unraisable
    try:
        _prepare_for_memory_limit()
        rv = cli.main(args=argv, prog_name="traceflow", standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        if _lost_memory:    # the command went on: what it wrote may lack what was lost
            code = _fail(f"{guard.command_name(argv or sys.argv[1:])}: "
                         f"{out_of_memory(LOST + '; the outputs may be incomplete')}", 2)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except NoArgsIsHelp as exc:  # bare `traceflow`: the help as Click formats it, status 0
        click.echo(exc.ctx.get_help())
        code = 0
    except click.exceptions.Abort:
        code = _fail("aborted", 130)
    except click.ClickException as exc:
        code = _fail(exc.format_message(), exc.exit_code)
    except TraceflowError as exc:
        code = _fail(str(exc), exc.exit_code)
    except KeyboardInterrupt:
        code = _fail("interrupted", 130)
    except BaseException as exc:  # noqa: BLE001 - what is not exhaustion or a file is re-raised
        code = _resource_failure(exc, argv or sys.argv[1:])
        if code is None:
            raise  # a bug: the traceback is wanted
    sys.exit(code)


def _resource_failure(exc, argv):
    """Report running out of memory, or an OSError about a file, in one line; else None."""
    detail = exhaustion(exc)
    if detail is None and _lost_memory:
        detail = LOST
    if detail is not None:
        return _fail(f"{guard.command_name(argv)}: {out_of_memory(detail)}", 2)
    if isinstance(exc, OSError) and (exc.filename or exc.errno in WRITE_ERRNOS):
        where = f"{exc.filename}: " if exc.filename else ""
        return _fail(f"{where}{exc.strerror or exc}", 2)
    return None


if __name__ == "__main__":
    main()
