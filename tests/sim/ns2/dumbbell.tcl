# ns-2 oracle: n TCP flows across a dumbbell, mirrored by traceflow's replays/dumbbell*.toml.
# Usage: ns dumbbell.tcl key=value ...   (see the defaults below)
# Prints one "key value" line per measurement of the bottleneck (R1 -> R2) queue.
array set P {
  flows 10 flavor NewReno queue DropTail duration 60
  bneck_rate 10Mb bneck_delay 20ms limit 100
  access_rate 100Mb access_delay 5ms access_step 0
  pkt 1000 window 1000 iw 1 minrto 0.2 tick 0.01
  red_min 5 red_max 15 red_wq 0.002 red_maxp 0.1 red_gentle false red_wait true red_bytes false
  vegas_alpha 1 vegas_beta 3 vegas_gamma 1
  start_spread 1.0 seed 1 xi0 1.0
  cwnd_file {} cwnd_dt 0.1 cwnd_flow 0
}
source [file join [file dirname [info script]] common.tcl]
Agent/TCP/Vegas set v_alpha_ $P(vegas_alpha)
Agent/TCP/Vegas set v_beta_ $P(vegas_beta)
Agent/TCP/Vegas set v_gamma_ $P(vegas_gamma)
red_defaults

set r1 [$ns node]
set r2 [$ns node]
bottleneck $r1 $r2 $P(bneck_rate) $P(bneck_delay) $P(queue) $P(limit) $P(limit)

for {set i 0} {$i < $P(flows)} {incr i} {
  set s($i) [$ns node]
  set d($i) [$ns node]
  # access_step (s): sender i's access link is i * access_step longer (breaks exact ties)
  set src_delay [expr {[delay_parse $P(access_delay)] + $i * $P(access_step)}]
  $ns duplex-link $s($i) $r1 $P(access_rate) $src_delay DropTail
  $ns duplex-link $r2 $d($i) $P(access_rate) $P(access_delay) DropTail
  $ns queue-limit $s($i) $r1 1000
  $ns queue-limit $r1 $s($i) 1000
  $ns queue-limit $r2 $d($i) 1000
  $ns queue-limit $d($i) $r2 1000
  tcp_flow $i $agent($P(flavor)) $i $s($i) $d($i)
  # flow 0's congestion-avoidance slope (cwnd += increase_num_ / cwnd): TCP-MT's xi
  if {$i == 0} { $tcp($i) set increase_num_ $P(xi0) }
  $ns at [expr {$P(start_spread) * $i / $P(flows)}] "$ftp($i) start"
}

set qmon [$ns monitor-queue $r1 $r2 ""]

# optional: flow 0's cwnd_ every cwnd_dt seconds, "time cwnd" lines in cwnd_file
if {$P(cwnd_file) ne {}} {
  set cwnd_out [open $P(cwnd_file) w]
  proc sample_cwnd {} {
    global ns tcp P cwnd_out qmon
    puts $cwnd_out "[$ns now] [$tcp($P(cwnd_flow)) set cwnd_] [$qmon set pkts_]"
    $ns at [expr {[$ns now] + $P(cwnd_dt)}] "sample_cwnd"
  }
  $ns at 0.0 "sample_cwnd"
}

proc finish {} {
  global qmon P tcp cwnd_out
  set arr [$qmon set parrivals_]
  set dep [$qmon set pdepartures_]
  set drops [$qmon set pdrops_]
  set bdep [$qmon set bdepartures_]
  puts "arrivals $arr"
  puts "departures $dep"
  puts "drops $drops"
  puts "departed_bytes $bdep"
  puts "throughput_bps [expr {8.0 * $bdep / $P(duration)}]"
  puts "loss_rate [expr {$arr > 0 ? double($drops) / $arr : 0.0}]"
  # packets are numbered from 0: the highest cumulative ACK + 1 segments reached the sink
  puts "flow0_goodput_bytes [expr {([$tcp(0) set ack_] + 1) * $P(pkt)}]"
  puts "flow0_timeouts [$tcp(0) set nrexmit_]"
  if {$P(cwnd_file) ne {}} { close $cwnd_out }
  exit 0
}
$ns at $P(duration) "finish"
$ns run
