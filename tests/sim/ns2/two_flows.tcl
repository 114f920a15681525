# ns-2 referee for Wu & Nikolaidis 2002, Fig. 1: two Reno flows through one bottleneck; flow 1
# has RTT rtt1, flow 0 rtt0 (both propagation RTTs, s). Mirrored by replays/class_fig1.toml.
# Usage: ns two_flows.tcl key=value ...   (defaults below)
# Prints "key value" lines: per-flow goodput (packets acknowledged) and the bottleneck counts.
array set P {
  rtt0 1.0 rtt1 0.1 queue DropTail limit 24 rate 800kb bneck_delay 1ms
  pkt 960 window 20 iw 2 minrto 0.2 tick 0.01 syn true delay_growth false flavor Reno
  red_min 5 red_max 15 red_wq 0.002 red_maxp 0.02 red_gentle false red_wait true
  duration 150 seed 1 start_spread 1.0
}
foreach arg $argv {
  set kv [split $arg =]
  set P([lindex $kv 0]) [lindex $kv 1]
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
Queue/RED set bytes_ false
Queue/RED set queue_in_bytes_ false
Queue/RED set thresh_ $P(red_min)
Queue/RED set maxthresh_ $P(red_max)
Queue/RED set q_weight_ $P(red_wq)
Queue/RED set linterm_ [expr {1.0 / $P(red_maxp)}]
Queue/RED set gentle_ $P(red_gentle)
Queue/RED set wait_ $P(red_wait)
Queue/RED set mean_pktsize_ [expr {$P(pkt) + 40}]

set r1 [$ns node]
set r2 [$ns node]
$ns simplex-link $r1 $r2 $P(rate) $P(bneck_delay) $P(queue)
$ns simplex-link $r2 $r1 $P(rate) $P(bneck_delay) DropTail
$ns queue-limit $r1 $r2 $P(limit)
$ns queue-limit $r2 $r1 1000

set agent(Reno) Agent/TCP/Reno
set agent(NewReno) Agent/TCP/Newreno
foreach i {0 1} {
  # one-way propagation: rtt/2 = access + bottleneck + egress (1 ms)
  set access [expr {$P(rtt$i) / 2.0 - 0.001 - [$ns delay_parse $P(bneck_delay)]}]
  set s($i) [$ns node]
  set d($i) [$ns node]
  $ns duplex-link $s($i) $r1 100Mb [expr {$access}]s DropTail
  $ns duplex-link $r2 $d($i) 100Mb 1ms DropTail
  $ns queue-limit $s($i) $r1 1000
  $ns queue-limit $r2 $d($i) 1000
  set tcp($i) [new $agent($P(flavor))]
  $tcp($i) set fid_ $i
  set sink($i) [new Agent/TCPSink]
  $ns attach-agent $s($i) $tcp($i)
  $ns attach-agent $d($i) $sink($i)
  $ns connect $tcp($i) $sink($i)
  set ftp($i) [new Application/FTP]
  $ftp($i) attach-agent $tcp($i)
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
