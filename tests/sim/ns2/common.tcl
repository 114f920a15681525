# Shared by the ns-2 oracle scripts beside it. A script sets its defaults in the array P, then
# sources this file, which
# * overrides P from the key=value arguments (a value may itself contain "=");
# * makes the simulator $ns, seeds ns-random and one RNG $rng with P(seed);
# * sets the TCP agents' defaults: packet size P(pkt) bytes, window P(window) and initial window
#   P(iw) packets, minimum RTO P(minrto) s, clock tick P(tick) s, syn_ and delay_growth_ from
#   P(syn) and P(delay_growth) (false unless the script or the user sets them);
# and defines agent(flavor) (the TCP agent class of a flavor name), red_defaults, tcp_flow and
# bottleneck.
foreach {k v} {syn false delay_growth false} {
  if {![info exists P($k)]} { set P($k) $v }
}
foreach arg $argv {
  set kv [split $arg =]
  set P([lindex $kv 0]) [join [lrange $kv 1 end] =]
}

set ns [new Simulator]
ns-random $P(seed)
set rng [new RNG]
$rng seed $P(seed)

Agent/TCP set packetSize_ $P(pkt)
Agent/TCP set window_ $P(window)
Agent/TCP set windowInit_ $P(iw)
Agent/TCP set minrto_ $P(minrto)
Agent/TCP set tcpTick_ $P(tick)
Agent/TCP set syn_ $P(syn)
Agent/TCP set delay_growth_ $P(delay_growth)

array set agent {Reno Agent/TCP/Reno NewReno Agent/TCP/Newreno Tahoe Agent/TCP Vegas Agent/TCP/Vegas}

# RED's defaults from P: thresholds red_min/red_max (packets, or bytes when red_bytes is true),
# averaging weight red_wq, max_p red_maxp, red_gentle, red_wait; mean packet size = pkt + 40
# header bytes.
proc red_defaults {} {
  global P
  Queue/RED set bytes_ $P(red_bytes)
  Queue/RED set queue_in_bytes_ $P(red_bytes)
  Queue/RED set thresh_ $P(red_min)
  Queue/RED set maxthresh_ $P(red_max)
  Queue/RED set q_weight_ $P(red_wq)
  Queue/RED set linterm_ [expr {1.0 / $P(red_maxp)}]
  Queue/RED set gentle_ $P(red_gentle)
  Queue/RED set wait_ $P(red_wait)
  Queue/RED set mean_pktsize_ [expr {$P(pkt) + 40}]
}

# Flow i: a new agent of class cls with flow id fid on node src, connected to a TCPSink on node
# dst, with an FTP application on top: tcp(i), sink(i), ftp(i).
proc tcp_flow {i cls fid src dst} {
  global ns tcp sink ftp
  set tcp($i) [new $cls]
  $tcp($i) set fid_ $fid
  set sink($i) [new Agent/TCPSink]
  $ns attach-agent $src $tcp($i)
  $ns attach-agent $dst $sink($i)
  $ns connect $tcp($i) $sink($i)
  set ftp($i) [new Application/FTP]
  $ftp($i) attach-agent $tcp($i)
}

# The bottleneck between nodes from and to: rate (bit/s, ns-2 units like 10Mb) and delay each way,
# queue discipline queue from -> to holding limit packets, DropTail back_limit packets back.
proc bottleneck {from to rate delay queue limit back_limit} {
  global ns
  $ns simplex-link $from $to $rate $delay $queue
  $ns simplex-link $to $from $rate $delay DropTail
  $ns queue-limit $from $to $limit
  $ns queue-limit $to $from $back_limit
}
