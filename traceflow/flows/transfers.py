"""Transfer times of TCP connections from their packets: request to last data byte.

A client opens a connection, sends a request and reads the response; what the user waits for is
the time from the request to the last byte of the response. Measured on the packets of one
vantage point (per connection of :func:`traceflow.flows.hosts.connections`):

- ``t_request``: the first packet carrying payload, in either direction (the request; for an
  upload, where the client is the data sender, its first data segment);
- ``t_last``: when the last new data byte of the data sender was seen: for every distinct segment
  start of the sender, its first appearance; the latest of these. A lost segment appears only
  when its retransmission passes, a spuriously retransmitted one counts at its first copy, so
  behind the bottleneck (where the receiver is) this is when the receiver held every byte;
- ``fct`` = ``t_last - t_request`` (seconds); ``size``: bytes of the data sender's sequence space
  covered (the transfer size); ``rtt``: handshake RTT SYN → SYN/ACK → client's ACK (seconds);
- only *complete* transfers: the SYN, SYN/ACK and the client's ACK were seen and the connection
  closed (FIN or RST) within the capture.

The same function runs on a capture and on a simulator run's bottleneck pcap, so both sides are
measured alike.
"""
import polars as pl

SYN, ACK, FIN, RST = 0x02, 0x10, 0x01, 0x04


def transfer_times(packets=None, *, conns=None):
    """One row per complete TCP transfer of ``packets`` (a packets table, Arrow or Polars), or
    of their :func:`traceflow.flows.hosts.connections` ``conns`` when already at hand:
    ``conn``, ``client_port``, ``syn_ts`` (the SYN's timestamp), ``t_syn``, ``t_request``,
    ``t_last``, ``t_fin`` (the data sender's first FIN, null without one) (s from the capture
    start), ``fct`` (s), ``size`` (bytes), ``rtt`` (s, null without a clean handshake)."""
    from traceflow.flows.hosts import connections

    df = connections(packets) if conns is None else conns
    if df.height == 0:
        return pl.DataFrame(schema={"conn": pl.Int64, "client_port": pl.UInt16,
                                    "syn_ts": pl.Datetime("ns"), "t_syn": pl.Float64,
                                    "t_request": pl.Float64, "t_last": pl.Float64, "t_fin": pl.Float64,
                                    "fct": pl.Float64, "size": pl.Int64, "rtt": pl.Float64})
    flags = pl.col("tcp_flags")
    syn = ((flags & SYN) != 0) & ((flags & ACK) == 0)
    synack = ((flags & SYN) != 0) & ((flags & ACK) != 0)
    data = pl.col("sender") & (pl.col("payload_len") > 0)
    # the first appearance of every distinct segment start of the data sender
    firsts = (df.filter(data).group_by("conn", "rel_seq")
              .agg(first=pl.col("ts_s").min(), end=(pl.col("rel_seq") + pl.col("payload_len")).max())
              .group_by("conn").agg(t_last=pl.col("first").max(), size=pl.col("end").max()))
    per = df.group_by("conn").agg(
        client_port=pl.col("sport").filter(pl.col("fwd")).first(),
        t_syn=pl.col("ts_s").filter(syn).first(),
        syn_ts=pl.col("ts").filter(syn).first(),
        syns=syn.sum(),
        t_synack=pl.col("ts_s").filter(synack).first(),
        synacks=synack.sum(),
        t_ack=pl.col("ts_s").filter(pl.col("fwd") & ~syn & ((flags & ACK) != 0)).first(),
        t_request=pl.col("ts_s").filter(pl.col("payload_len") > 0).first(),
        t_fin=pl.col("ts_s").filter(pl.col("sender") & ((flags & FIN) != 0)).first(),
        closed=((flags & (FIN | RST)) != 0).any())
    # Karn's rule for the handshake RTT: one SYN and one SYN/ACK, else no sample
    clean = (pl.col("syns") == 1) & (pl.col("synacks") == 1)
    return (per.join(firsts, on="conn")
            .filter(pl.col("t_syn").is_not_null() & pl.col("t_synack").is_not_null()
                    & pl.col("t_ack").is_not_null() & pl.col("closed") & (pl.col("size") > 0))
            .select("conn", "client_port", "syn_ts", "t_syn", "t_request", "t_last", "t_fin",
                    fct=pl.col("t_last") - pl.col("t_request"),
                    size=pl.col("size").cast(pl.Int64),
                    rtt=pl.when(clean).then(pl.col("t_ack") - pl.col("t_syn")))
            .sort("t_syn"))
