# ns-2 referee for Wu & Nikolaidis 2002, Fig. 1: two Reno flows through one bottleneck; flow 1
# has RTT rtt1, flow 0 rtt0 (both propagation RTTs, s). Mirrored by replays/class_fig1.toml.
# Usage: ns two_flows.tcl key=value ...   (defaults below)
# Prints "key value" lines: per-flow goodput (packets acknowledged) and the bottleneck counts.
array set P {
  rtt0 1.0 rtt1 0.1 queue DropTail limit 24 rate 800kb bneck_delay 1ms
  pkt 960 window 20 iw 2 minrto 1 tick 0.01 rtxcur_init 6.0 syn true delay_growth false flavor Reno
  red_min 5 red_max 15 red_wq 0.002 red_maxp 0.02 red_gentle true red_wait true red_bytes false
  duration 150 seed 1 start_spread 1.0
}
source [file join [file dirname [info script]] common.tcl]
Agent/TCP set rtxcur_init_ $P(rtxcur_init)
red_defaults

set r1 [$ns node]
set r2 [$ns node]
bottleneck $r1 $r2 $P(rate) $P(bneck_delay) $P(queue) $P(limit) 1000

foreach i {0 1} {
  # one-way propagation: rtt/2 = access + bottleneck + egress (1 ms)
  set access [expr {$P(rtt$i) / 2.0 - 0.001 - [$ns delay_parse $P(bneck_delay)]}]
  set s($i) [$ns node]
  set d($i) [$ns node]
  $ns duplex-link $s($i) $r1 100Mb [expr {$access}]s DropTail
  $ns duplex-link $r2 $d($i) 100Mb 1ms DropTail
  $ns queue-limit $s($i) $r1 1000
  $ns queue-limit $r2 $d($i) 1000
  tcp_flow $i $agent($P(flavor)) $i $s($i) $d($i)
  # start$i=T fixes a start time (s); otherwise the seed draws it
  if {![info exists P(start$i)]} { set P(start$i) [$rng uniform 0 $P(start_spread)] }
  $ns at $P(start$i) "$ftp($i) start"
}
set qmon [$ns monitor-queue $r1 $r2 ""]
if {[info exists P(trace)]} {
  # per-packet events of the bottleneck queue (+ enqueue, - dequeue, d drop, r receive)
  set tf [open $P(trace) w]
  $ns trace-queue $r1 $r2 $tf
}

proc finish {} {
  global qmon P tcp
  foreach i {0 1} { puts "goodput$i [expr {[$tcp($i) set ack_] + 1}]" }
  puts "arrivals [$qmon set parrivals_]"
  puts "drops [$qmon set pdrops_]"
  exit 0
}
$ns at $P(duration) "finish"
$ns run
