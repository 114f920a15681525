"""Network namespaces, veth pairs and the bottleneck qdisc of one testbed run; and their teardown.

Topology (three namespaces, two veth pairs; names unique per run so concurrent runs never meet)::

    srv [s0] ---- [r0] rtr [r1] ---- [c0] cli
                          └ HTB rate + bfifo/pfifo buffer on r1's egress (toward the clients)

The router's kernel does not forward (``ip_forward=0``): the delay relay (:mod:`.relay`) moves
every frame between r0 and r1. Offloads are off on every interface, so each frame the relay reads
is one MTU-sized segment with a complete checksum, and captures see segments as sent.
"""
import ctypes
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys

from traceflow.errors import TraceflowError
from traceflow.testbed.params import SERVER_ADDRESS, SERVER_NET, CLIENT_NET, client_address

TOOLS = ("ip", "tc", "tcpdump", "ethtool")
_PR_SET_PDEATHSIG = 1


def check_environment(cc):
    """Raise a one-line :class:`TraceflowError` unless this is Linux, we are root, the tools are
    installed and the kernel offers congestion control ``cc``."""
    if not sys.platform.startswith("linux"):
        raise TraceflowError(f"testbed needs Linux network namespaces (this is {sys.platform})")
    if os.geteuid() != 0:
        raise TraceflowError("testbed needs root (network namespaces, AF_PACKET, qdiscs); "
                             "run it with sudo")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise TraceflowError(f"testbed needs {', '.join(missing)} on PATH "
                             "(Debian: apt-get install iproute2 tcpdump ethtool)")
    available = _read("/proc/sys/net/ipv4/tcp_available_congestion_control").split()
    if cc not in available:
        raise TraceflowError(f"congestion control {cc!r} is not available in this kernel "
                             f"(available: {', '.join(available)})")


def _read(path):
    with open(path) as f:
        return f.read()


def run(argv, what=None):
    """Run a set-up command; a failure is a one-line :class:`TraceflowError`."""
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        raise TraceflowError(f"testbed set-up failed: {what or ' '.join(argv)}: {msg}")
    return r.stdout


def read_line(stream, timeout):
    """The next line of a child's text pipe, or "" at EOF or after ``timeout`` seconds (a child
    that hangs while starting must not hang the run)."""
    if not select.select([stream], [], [], timeout)[0]:
        return ""
    return stream.readline()


def _die_with_parent():
    # a child (relay, tcpdump, server, clients) must not outlive a killed `traceflow testbed`
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Topology:
    """The namespaces of one run. ``create()`` builds them; ``destroy()`` kills whatever still
    runs inside them and deletes them (safe to call twice, or after a partial ``create()``)."""

    def __init__(self, params):
        self.params = params
        tag = f"tf{os.getpid()}{secrets.token_hex(2)}"
        self.ns = {role: f"{tag}{role}" for role in ("srv", "rtr", "cli")}
        self.created = []

    # -- processes ---------------------------------------------------------------------------
    def exec_argv(self, role, argv):
        return ["ip", "netns", "exec", self.ns[role], *argv]

    def spawn(self, role, argv, **popen):
        """Start ``argv`` inside namespace ``role``, in its own session (a Ctrl-C on the terminal
        reaches only `traceflow testbed`, which then stops the children in order) and killed
        if `traceflow testbed` dies."""
        return subprocess.Popen(self.exec_argv(role, argv), start_new_session=True,
                                preexec_fn=_die_with_parent, **popen)

    def sh(self, role, *argv):
        return run(self.exec_argv(role, list(argv)))

    # -- set-up ------------------------------------------------------------------------------
    def create(self):
        p = self.params
        for role, ns in self.ns.items():
            run(["ip", "netns", "add", ns])
            self.created.append(ns)
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
        srv, rtr, cli = self.ns["srv"], self.ns["rtr"], self.ns["cli"]
        run(["ip", "link", "add", "s0", "netns", srv, "type", "veth", "peer", "name", "r0",
             "netns", rtr])
        run(["ip", "link", "add", "r1", "netns", rtr, "type", "veth", "peer", "name", "c0",
             "netns", cli])
        for role, dev, addr in (("srv", "s0", f"{SERVER_ADDRESS}/24"),
                                ("rtr", "r0", f"{SERVER_NET}.1/24"),
                                ("rtr", "r1", f"{CLIENT_NET}.1/24"),
                                ("cli", "c0", f"{CLIENT_NET}.2/24")):
            ns = self.ns[role]
            run(["ip", "-n", ns, "link", "set", dev, "mtu", str(p.mtu), "gso_max_segs", "1",
                 "gso_max_size", str(p.mtu)])
            run(["ip", "-n", ns, "addr", "add", addr, "dev", dev])
            # full checksums, no segmentation or coalescing: a relayed frame is a wire frame
            self.sh(role, "ethtool", "-K", dev, "tx", "off", "rx", "off", "gro", "off",
                    "gso", "off", "tso", "off")
            run(["ip", "-n", ns, "link", "set", dev, "up"])
        for c in range(len(p.rtt)):
            run(["ip", "-n", cli, "addr", "add", f"{client_address(c)}/24", "dev", "c0"])
        run(["ip", "-n", srv, "route", "add", "default", "via", f"{SERVER_NET}.1"])
        run(["ip", "-n", cli, "route", "add", "default", "via", f"{CLIENT_NET}.1"])
        self.sh("rtr", "sysctl", "-qw", "net.ipv4.ip_forward=0")
        allow_congestion_control(p.cc)
        for role in ("srv", "cli"):
            self.sh(role, "sysctl", "-qw", f"net.ipv4.tcp_congestion_control={p.cc}")
            # every connection starts from the defaults, not from a previous one's ssthresh
            self.sh(role, "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1")
        # the bottleneck: HTB at the rate into a byte or packet FIFO; the reverse path is not shaped
        self.sh("rtr", "tc", "qdisc", "add", "dev", "r1", "root", "handle", "1:", "htb",
                "default", "10")
        self.sh("rtr", "tc", "class", "add", "dev", "r1", "parent", "1:", "classid", "1:10",
                "htb", "rate", f"{p.rate}bit", "ceil", f"{p.rate}bit", "burst", "1600",
                "cburst", "1600")
        fifo = ["bfifo", "limit", f"{p.buffer}b"] if p.buffer_unit == "bytes" else \
            ["pfifo", "limit", str(p.buffer)]
        self.sh("rtr", "tc", "qdisc", "add", "dev", "r1", "parent", "1:10", "handle", "10:", *fifo)

    def mac(self, role, dev):
        return json.loads(run(["ip", "-n", self.ns[role], "-j", "link", "show", "dev", dev]))[0][
            "address"]

    def qdisc_stats(self):
        """The bottleneck's qdiscs and their counters (``tc -s -j``: bytes, packets, drops, ...)."""
        return json.loads(self.sh("rtr", "tc", "-s", "-j", "qdisc", "show", "dev", "r1"))

    # -- teardown ----------------------------------------------------------------------------
    def destroy(self):
        """Kill every process left in this run's namespaces, then delete them."""
        for ns in reversed(self.created):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.created = []


def allow_congestion_control(cc):
    """Add ``cc`` to ``net.ipv4.tcp_allowed_congestion_control`` (a namespace may only select an
    allowed one)."""
    path = "/proc/sys/net/ipv4/tcp_allowed_congestion_control"
    allowed = _read(path).split()
    if cc not in allowed:
        run(["sysctl", "-qw", f"net.ipv4.tcp_allowed_congestion_control={' '.join(allowed + [cc])}"])
