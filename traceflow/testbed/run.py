"""One testbed run, start to finish: namespaces, captures, relays, server, clients, outputs, teardown.

The run directory is written atomically (:func:`traceflow.atomic.atomic_dir`): it appears whole
or not at all. Whatever happens (an error, Ctrl-C, SIGTERM, SIGHUP), every child process is
stopped and the run's namespaces are deleted before :func:`run_testbed` returns or raises.
"""
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time

from traceflow.atomic import atomic_dir
from traceflow.errors import TraceflowError
from traceflow.testbed import relay
from traceflow.testbed.awake import KeepAwake
from traceflow.testbed.capture import Capture
from traceflow.testbed.netns import Topology, check_environment, read_line
from traceflow.testbed.outputs import host_steal_seconds, params_document, transfers
from traceflow.testbed.params import SERVER_ADDRESS, SERVER_PORT, client_address

POLL_S = 0.25                    # how often the progress callback is called
START_TIMEOUT_S = 20             # a relay or the server not ready by then has failed
SETTLE_S = 1.0                   # after the clients: the last FIN/ACKs cross the relay ...


class Interrupted(TraceflowError):
    """The run was stopped by a signal (its namespaces and processes are gone)."""

    exit_code = 130


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum, frame):
    raise Interrupted(f"testbed interrupted by {signal.Signals(signum).name}; "
                      "namespaces removed, no output written")


@contextlib.contextmanager
def _on_signals(handler):
    """Inside: SIGINT, SIGTERM and SIGHUP go to ``handler`` (a function or SIG_IGN)."""
    old = {s: signal.signal(s, handler) for s in _SIGNALS}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


class _Child:
    """A child process that prints "ready" when it is, and is stopped by ``how``: "stdin" (close
    its stdin, it exits and prints a JSON line) or a signal."""

    def __init__(self, topology, role, module, args, how):
        self.name, self.how = module, how
        self.out = self.err = self.result = None
        # stderr to a file, not a pipe: a pipe nobody reads during a long run could fill and
        # block the child
        self.errfile = tempfile.TemporaryFile(mode="w+")
        # -P: the working directory must not shadow the installed package (a source checkout's
        # traceflow/ has no built extensions)
        self.proc = topology.spawn(
            role, [sys.executable, "-P", "-m", f"traceflow.testbed.{module}", *args],
            stdin=subprocess.PIPE if how == "stdin" else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=self.errfile, text=True)

    def wait_ready(self):
        if read_line(self.proc.stdout, START_TIMEOUT_S).strip() != "ready":
            raise TraceflowError(f"testbed: the {self.name} did not start: "
                                 f"{self.last_error()}")

    def last_error(self):
        self.stop()
        lines = (self.err or "").strip().splitlines()
        return lines[-1] if lines else f"exit {self.proc.returncode}"

    def stop(self):
        """Stop (idempotent); returns the JSON the child printed last, if any."""
        if self.out is not None:
            return self.result
        if self.proc.poll() is None and self.how != "stdin":
            self.proc.send_signal(self.how)
        try:
            # communicate() closes stdin: that is what stops a relay
            self.out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.out, _ = self.proc.communicate()
        self.errfile.seek(0)
        self.err = self.errfile.read()
        self.errfile.close()
        lines = self.out.strip().splitlines()
        self.result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
        return self.result


def run_testbed(params, outdir, progress=None):
    """Run the testbed described by ``params`` (:class:`~traceflow.testbed.params.Params`) and
    write ``outdir``: server_side.pcap, client_side.pcap, transfers.parquet, params.json.

    ``progress(elapsed_s, total_s)`` is called a few times a second while the clients run.
    Returns the params.json document as a dict. Needs root on Linux (else one-line error).
    """
    check_environment(params.cc)
    topology = Topology(params)
    stack = contextlib.ExitStack()
    with _on_signals(_interrupt), atomic_dir(outdir) as tmp:
        try:
            document = _run(params, topology, stack, tmp, progress)
        finally:
            # a second Ctrl-C must not cut the teardown short
            with _on_signals(signal.SIG_IGN):
                stack.close()
    return json.loads(document)


def _run(params, topology, stack, tmp, progress):
    """The body of :func:`run_testbed`; every started thing registers its stop on ``stack``."""
    tmp.chmod(0o755)
    stack.callback(KeepAwake().stop)     # an idle vCPU wakes late for the relay (awake.py)
    stack.callback(topology.destroy)
    topology.create()
    macs = {dev: topology.mac(role, dev)
            for role, dev in (("srv", "s0"), ("rtr", "r0"), ("rtr", "r1"), ("cli", "c0"))}
    classes = [client_address(c) for c in range(len(params.rtt))]
    relays = []
    for direction in ("down", "up"):
        s = relay.spec(direction, macs, params.rtt, SERVER_ADDRESS, classes, params.mtu)
        relays.append(_Child(topology, "rtr", "relay", [json.dumps(s)], "stdin"))
        stack.callback(relays[-1].stop)
    captures = {}
    for dev, name in (("r0", "server_side"), ("r1", "client_side")):
        captures[name] = Capture(topology, dev, tmp / f"{name}.pcap", params.snaplen)
        stack.callback(captures[name].stop)
    server = _Child(topology, "srv", "server", [SERVER_ADDRESS, str(SERVER_PORT)],
                    signal.SIGTERM)
    stack.callback(server.stop)
    for child in (*relays, server):
        child.wait_ready()
    for capture in captures.values():
        capture.wait_ready()
    log = tmp / "transfers.csv"
    workload = dict(out=str(log), seed=params.seed, clients=params.clients, alpha=params.alpha,
                    k=params.k, max_size=params.max_size, idle=params.idle,
                    duration=params.duration, drain=params.drain, classes=len(params.rtt))
    started, steal = time.time(), host_steal_seconds()
    client = _Child(topology, "cli", "client", [json.dumps(workload)], signal.SIGTERM)
    stack.callback(client.stop)
    while client.proc.poll() is None:
        _check_alive([*relays, server], captures.values())
        if progress is not None:
            progress(min(time.time() - started, params.duration), params.duration)
        time.sleep(POLL_S)
    wall, steal = time.time() - started, host_steal_seconds() - steal
    client.stop()
    if client.proc.returncode != 0:
        raise TraceflowError(f"testbed: the client workload failed: {client.last_error()}")
    # ... plus one largest RTT: the client's last FIN, the server's ACK of it and tcpdump's read
    time.sleep(SETTLE_S + max(params.rtt))
    qdisc = topology.qdisc_stats()
    server.stop()
    capture_counts = {name: c.stop() for name, c in captures.items()}
    relay_counts = {r.result["direction"]: r.result for r in relays if r.stop()}
    table = transfers(log, params)
    log.unlink()
    table.write_parquet(tmp / "transfers.parquet")
    document = params_document(
        params, started_at=started, wall_seconds=wall, steal_seconds=steal, qdisc=qdisc,
        captures=capture_counts,
        relay=relay_counts, transfers={"started": table.height,
                                       "completed": int(table["ok"].sum())})
    (tmp / "params.json").write_text(document)
    return document


def _check_alive(children, captures):
    """A relay, the server or a capture that died mid-run makes the run meaningless: stop it."""
    for child in children:
        if child.proc.poll() is not None:
            raise TraceflowError(f"testbed: the {child.name} died: {child.last_error()}")
    for capture in captures:
        if capture.proc.poll() is not None:
            raise TraceflowError(f"testbed: tcpdump on {capture.dev} died")
