# cython: language_level=3
"""The packet-level simulator kernel: one extension built from the ``.pxi`` parts below.

See sim/README.md for the interfaces (Queue, CongestionOps, SenderHook, App, Packet).
Plugin parts owned by other modules are included at the end: ``disciplines.pxi`` (router
disciplines) and ``ssc.pxi`` (TCP-MT's SSC hook); they may subclass anything defined before.
"""
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t, int32_t, uint32_t, uint16_t, uint8_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memset, memcpy
from libc.math cimport log, exp, sqrt, pow, floor, ceil, fabs
from libc.stdio cimport FILE, fopen, fwrite, fclose

cdef class Simulator
cdef class Component
cdef class Agent(Component)
cdef class Node(Component)
cdef class Link(Component)
cdef class Queue
cdef class PcapWriter
cdef class App(Component)
cdef class TcpSender(Agent)
cdef class TcpSink(Agent)
cdef class TcpClient(Component)
cdef class CongestionOps
cdef class RecoveryOps
cdef class SenderHook
cdef class UdpSource(Agent)

include "packet.pxi"
include "engine.pxi"
include "queue.pxi"
include "red.pxi"
include "pcapout.pxi"
include "link.pxi"
include "rtt_linux.pxi"
include "tcp.pxi"
include "recovery.pxi"
include "recovery_classic.pxi"
include "recovery_sack.pxi"
include "cc.pxi"
include "cc_reno_linux.pxi"
include "cc_cubic.pxi"
include "cc_bbr.pxi"
include "sink.pxi"
include "client.pxi"
include "udp.pxi"
include "workloads.pxi"
include "monitors.pxi"
include "disciplines.pxi"
include "classify.pxi"
include "das.pxi"
include "fairshare.pxi"
include "capm.pxi"
include "wfq.pxi"
include "ssc.pxi"
