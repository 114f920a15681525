# ns-2 referee for Wu & Nikolaidis 2002, Figs. 5 and 11-13: long-lived and short-lived Reno flows,
# each from its own node with its own propagation RTT, through one 100 packets/s bottleneck that
# is either one DropTail FIFO (queue=DropTail, MIX-DT) or classful (queue=CBQ: the classes of
# traceflow's ClassfulQueue, each a DropTail queue of class_limit packets, served by ns-2's
# CBQ/WRR with the formal link-sharing guidelines: root -> one CBQ class per group with allot
# from `groups` -> `per_group` leaf classes sharing the group's allot equally).
# Classification is static: the flows file gives each flow its class (traceflow's classifier moves
# a long-lived flow to its long class after 50 packets; ns-2 has no such classifier).
# Flows file: one line per flow "start_s packets rtt_s class" (packets -1: never ends).
# Usage: ns wu_classes.tcl flows=FILE key=value ...   Prints "gI packets" (packets acknowledged of
# flow I), "arrivals" and "drops" of the bottleneck.
array set P {
  flows "" queue CBQ limit 25 groups "0.6 0.4" per_group 3 class_limit 4 rate 800kb
  bneck_delay 1ms pkt 960 window 1000 iw 2 minrto 1 tick 0.01 rtxcur_init 6.0 syn true
  duration 150 seed 1
}
source [file join [file dirname [info script]] common.tcl]
Agent/TCP set rtxcur_init_ $P(rtxcur_init)

set r1 [$ns node]
set r2 [$ns node]
set d [$ns node]
if {$P(queue) eq "CBQ"} {
  $ns simplex-link $r1 $r2 $P(rate) $P(bneck_delay) CBQ/WRR
  $ns simplex-link $r2 $r1 $P(rate) $P(bneck_delay) DropTail
  $ns queue-limit $r2 $r1 1000
  set cbq [$ns link $r1 $r2]
  [$cbq queue] algorithm formal
  set root [new CBQClass]
  $root setparams none 0 1.0 auto 8 3 0
  $cbq insert $root
  set c 0
  foreach allot $P(groups) {
    set grp [new CBQClass]
    $grp setparams $root true $allot auto 8 2 0
    $cbq insert $grp
    for {set k 0} {$k < $P(per_group)} {incr k} {
      set leaf($c) [new CBQClass]
      $leaf($c) setparams $grp true [expr {$allot / $P(per_group)}] auto 8 1 0
      set q [new Queue/DropTail]
      $q set limit_ $P(class_limit)
      $leaf($c) install-queue $q
      $cbq insert $leaf($c)
      incr c
    }
  }
} else {
  bottleneck $r1 $r2 $P(rate) $P(bneck_delay) $P(queue) $P(limit) 1000
}
$ns duplex-link $r2 $d 100Mb 1ms DropTail
$ns queue-limit $r2 $d 1000

set fh [open $P(flows)]
set n 0
while {[gets $fh line] >= 0} {
  lassign $line start packets rtt cls
  # one-way propagation: rtt/2 = access + bottleneck + egress (1 ms)
  set access [expr {$rtt / 2.0 - 0.001 - [$ns delay_parse $P(bneck_delay)]}]
  set s [$ns node]
  $ns duplex-link $s $r1 100Mb ${access}s DropTail
  $ns queue-limit $s $r1 1000
  tcp_flow $n Agent/TCP/Reno $n $s $d
  if {[info exists cbq]} { $cbq bind $leaf($cls) $n }
  if {$packets < 0} {
    $ns at $start "$ftp($n) start"
  } else {
    $ns at $start "$tcp($n) advanceby $packets"
  }
  incr n
}
close $fh
set qmon [$ns monitor-queue $r1 $r2 ""]

proc finish {} {
  global qmon tcp n
  for {set i 0} {$i < $n} {incr i} { puts "g$i [expr {[$tcp($i) set ack_] + 1}]" }
  puts "arrivals [$qmon set parrivals_]"
  puts "drops [$qmon set pdrops_]"
  exit 0
}
$ns at $P(duration) "finish"
$ns run
