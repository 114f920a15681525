# ns-2 referee for Kalantari & Shayman, section VI (fairness experiment): on/off TCP sources in
# groups (aggregates) over the chain S_i -> R1 -> R2 -> dst, mirrored by replays/capm_*.toml.
# Each source is one FTP on one TCP agent, started for a random on time and stopped for a
# random idle time; restart=1 resets the agent pair at each start (a new TCP flow: slow start,
# initial RTO), restart=0 keeps the window and RTT estimate across on periods.
# Usage: ns capm.tcl key=value ...  groups="n1 on_lo on_hi off_lo off_hi n2 ..."
# p_drop="p1 p2 ...": per-aggregate random drops at R1 (the K-based policy, eqs. 16-17).
# Prints per group: "rate<k> packets/s" sent into R1 after the warm-up, and R1's loss rate.
array set P {
  groups "50 0.15 0.3 0.0 0.3 20 0.45 0.9 0.0 0.5" rtt_lo 0.05 rtt_hi 0.10
  rate 100Mb delay 5ms limit 101 egress_limit 501 pkt 960 window 20 iw 1 minrto 0.2 tick 0.01
  duration 70 warmup 10 seed 1 p_drop "" restart 1
}
source [file join [file dirname [info script]] common.tcl]

set r1 [$ns node]
set r2 [$ns node]
set dst [$ns node]
$ns simplex-link $r1 $r2 $P(rate) $P(delay) DropTail
$ns simplex-link $r2 $r1 $P(rate) $P(delay) DropTail
$ns simplex-link $r2 $dst $P(rate) $P(delay) DropTail
$ns simplex-link $dst $r2 $P(rate) $P(delay) DropTail
$ns queue-limit $r1 $r2 $P(limit)
$ns queue-limit $r2 $dst $P(egress_limit)
set delay_s [$ns delay_parse $P(delay)]

proc on {i} {
  global ns ftp rng lo hi tcp sink P
  if {$P(restart)} { $tcp($i) reset; $sink($i) reset }
  $ftp($i) start
  $ns at [expr {[$ns now] + [$rng uniform $lo($i,on) $hi($i,on)]}] "off $i"
}
proc off {i} {
  global ns ftp rng lo hi
  $ftp($i) stop
  $ns at [expr {[$ns now] + [$rng uniform $lo($i,off) $hi($i,off)]}] "on $i"
}

set n 0
set g 0
foreach {count on_lo on_hi off_lo off_hi} $P(groups) {
  for {set k 0} {$k < $count} {incr k} {
    set rtt [$rng uniform $P(rtt_lo) $P(rtt_hi)]
    set s($n) [$ns node]
    $ns duplex-link $s($n) $r1 $P(rate) [expr {$rtt / 2.0 - 2 * $delay_s}]s DropTail
    $ns queue-limit $s($n) $r1 1000
    tcp_flow $n $agent(Reno) $g $s($n) $dst
    set group($n) $g
    set lo($n,on) $on_lo; set hi($n,on) $on_hi; set lo($n,off) $off_lo; set hi($n,off) $off_hi
    $ns at [$rng uniform 0 0.3] "on $n"
    incr n
  }
  incr g
}
set ngroups $g

if {$P(p_drop) != ""} {
  # K-based drops: a random-loss error model per aggregate (flow id) in front of R1's queue
  set k 0
  set cls [new Classifier/Hash/Fid 4]
  foreach p $P(p_drop) {
    set em($k) [new ErrorModel]
    $em($k) unit pkt
    $em($k) set rate_ $p
    $em($k) ranvar [new RandomVariable/Uniform]
    incr k
  }
  $ns lossmodel $em(0) $r1 $r2
}

set qmon [$ns monitor-queue $r1 $r2 ""]
set fmon [$ns makeflowmon Fid]
$ns attach-fmon [$ns link $r1 $r2] $fmon

proc snapshot {} {
  global fmon ngroups base
  foreach f [$fmon flows] { set base([$f set flowid_]) [$f set parrivals_] }
}
proc finish {} {
  global fmon P ngroups base qmon
  foreach f [$fmon flows] {
    set id [$f set flowid_]
    puts "rate$id [expr {([$f set parrivals_] - $base($id)) / double($P(duration) - $P(warmup))}]"
  }
  puts "loss_rate [expr {double([$qmon set pdrops_]) / [$qmon set parrivals_]}]"
  exit 0
}
$ns at $P(warmup) "snapshot"
$ns at $P(duration) "finish"
$ns run
