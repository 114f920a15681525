# ns-2 referee for Kalantari & Shayman, section VI: on/off TCP sources in groups (aggregates,
# flow id = group index) over the chain S_i -> R1 -> R2 -> dst, mirrored by replays/capm_*.toml.
# Each source is one FTP on a TCP agent, started for a random on time and stopped for a random
# idle time. restart=0 keeps one agent per source (window and RTT estimate carry over; after an
# idle RTO the window restarts from one segment: traceflow's persistent on/off sources);
# restart=1 gives each on period a fresh agent pair (a new TCP flow: slow start, initial RTO;
# the previous one finishes what it had sent, where traceflow's source waits for it).
# Usage: ns capm.tcl key=value ...  groups="n1 on_lo on_hi off_lo off_hi n2 ..."
#
# CAPM perturbation (eq. 3): router k (1 = R1 on R1->R2, 2 = R2 on R2->dst) drops amp<k>
# packets/s of aggregate agg<k> (-1: every packet) during the 1-chips of code<k> (chips of
# chip s, repeated from pstart on). The drops are an ErrorModel/Periodic (unit time) in front
# of the router's queue, switched on per run of 1-chips: it drops the first packet of the
# aggregate at least 1/amp s after its previous drop, so the pacing matches traceflow's credit
# dropper up to one inter-arrival per drop; the drops are counted (pert_drops<k>) so that K can
# be divided by the amplitude actually applied.
# p_drop="p1 p2 ...": per-aggregate random drops at R1 in front of its queue (the K-based
# policy, eqs. 16-17).
# series=PREFIX writes the arrivals of each aggregate at R1 (PREFIX.R1) and R2 (PREFIX.R2) per
# bin of bin s from t = 0, one line per bin, one count per aggregate: traceflow's matched
# filter reads them (tests/experiments/test_capm_ns2.py).
# Prints "rate<k>" (packets/s of aggregate k arriving at R1 after the warm-up), R1's loss rate
# and utilization, and pert_drops<k>.
array set P {
  groups "50 0.15 0.3 0.0 0.3 20 0.45 0.9 0.0 0.5" rtt_lo 0.05 rtt_hi 0.10
  rate 100Mb delay 5ms limit 101 egress_limit 501 pkt 960 window 20 iw 2 minrto 1 tick 0.01 rtxcur_init 6.0
  duration 70 warmup 10 seed 1 p_drop "" restart 0
  code1 "" amp1 0 agg1 -1 code2 "" amp2 0 agg2 -1 chip 2.0 pstart "" series "" bin 0.01
}
source [file join [file dirname [info script]] common.tcl]
Agent/TCP set rtxcur_init_ $P(rtxcur_init)
if {$P(pstart) == ""} { set P(pstart) $P(warmup) }

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

# a fresh agent pair for source i in group g (restart=1), FTP on top: tcp(i), sink(i), ftp(i)
proc fresh {i} {
  global ns agent group s dst
  tcp_flow $i $agent(Reno) $group($i) $s($i) $dst
}
proc on {i} {
  global ns ftp rng lo hi P
  if {$P(restart)} { fresh $i }
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
    set group($n) $g
    if {!$P(restart)} { tcp_flow $n $agent(Reno) $g $s($n) $dst }
    set lo($n,on) $on_lo; set hi($n,on) $on_hi; set lo($n,off) $off_lo; set hi($n,off) $off_hi
    $ns at [$rng uniform 0 0.3] "on $n"
    incr n
  }
  incr g
}
set ngroups $g

# An error module in front of the queue from -> to: model em for aggregate agg (every aggregate
# for -1), the others pass.
proc error_module {from to em agg} {
  global ns ngroups
  if {$agg < 0} {
    $ns lossmodel $em $from $to
    return
  }
  set mod [new ErrorModule Fid]
  $mod insert $em
  $mod bind $em $agg
  $mod default pass
  $ns lossmodel $mod $from $to
}

# Router k's CAPM dropper on the link from -> to; its drops go to a counter (pert(k)).
proc perturb {k from to} {
  global ns P pert
  set amp [expr {double($P(amp$k))}]
  if {$amp <= 0 || $P(code$k) == ""} { return }
  set em [new ErrorModel/Periodic]
  $em unit time
  $em set period_ 1e9
  set pert($k) [new Agent/LossMonitor]
  # runs of 1-chips over the whole run (a run may cross the end of a code period)
  set code $P(code$k)
  set nchip [llength $code]
  set runs {}
  set t $P(pstart)
  set j 0
  set start -1
  while {$t < $P(duration)} {
    set c [lindex $code [expr {$j % $nchip}]]
    if {$c == 1 && $start < 0} { set start $t }
    if {$c != 1 && $start >= 0} { lappend runs $start $t; set start -1 }
    incr j
    set t [expr {$P(pstart) + $j * $P(chip)}]
  }
  if {$start >= 0} { lappend runs $start $P(duration) }
  # the first drop of a run comes 1/amp s into it, as traceflow's credit reaches one then
  $em set offset_ [expr {[lindex $runs 0] + 1.0 / $amp}]
  foreach {a b} $runs {
    $ns at [expr {$a + 1.0 / $amp}] "$em set period_ [expr {1.0 / $amp}]"
    $ns at $b "$em set period_ 1e9"
  }
  error_module $from $to $em $P(agg$k)
  $em drop-target $pert($k)
}
perturb 1 $r1 $r2
perturb 2 $r2 $dst

if {$P(p_drop) != ""} {
  # K-based drops: a random-loss error model per aggregate (flow id) in front of R1's queue
  set mod [new ErrorModule Fid]
  set k 0
  foreach p $P(p_drop) {
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $p
    $em ranvar [new RandomVariable/Uniform]
    $mod insert $em
    $mod bind $em $k
    incr k
  }
  $ns lossmodel $mod $r1 $r2
}

# monitors after the error modules: arrivals include the packets they drop, drops count them
set qmon [$ns monitor-queue $r1 $r2 ""]
foreach {name from to} [list R1 $r1 $r2 R2 $r2 $dst] {
  set fmon($name) [$ns makeflowmon Fid]
  $ns attach-fmon [$ns link $from $to] $fmon($name)
}

# arrivals of each aggregate at each router per bin
proc arrivals {name} {
  global fmon ngroups
  for {set g 0} {$g < $ngroups} {incr g} { set a($g) 0 }
  foreach f [$fmon($name) flows] { set a([$f set flowid_]) [$f set parrivals_] }
  set out {}
  for {set g 0} {$g < $ngroups} {incr g} { lappend out $a($g) }
  return $out
}
if {$P(series) != ""} {
  foreach name {R1 R2} {
    set sfile($name) [open $P(series).$name w]
    set last($name) [arrivals $name]
  }
  set nbins 0
  proc sample {} {
    global ns P sfile last nbins
    incr nbins
    foreach name {R1 R2} {
      set now [arrivals $name]
      set line {}
      foreach x $now y $last($name) { lappend line [expr {$x - $y}] }
      puts $sfile($name) $line
      set last($name) $now
    }
    $ns at [expr {[$ns now] + $P(bin)}] "sample"
  }
  $ns at $P(bin) "sample"
}

proc snapshot {} {
  global base qmon
  set base(R1) [arrivals R1]
  set base(dep) [$qmon set pdepartures_]
}
proc finish {} {
  global P base qmon pert sfile ns
  set span [expr {double($P(duration) - $P(warmup))}]
  set g 0
  foreach x [arrivals R1] y $base(R1) {
    puts "rate$g [expr {($x - $y) / $span}]"
    incr g
  }
  puts "loss_rate [expr {double([$qmon set pdrops_]) / [$qmon set parrivals_]}]"
  set cap [expr {[$ns bw_parse $P(rate)] / (8.0 * ($P(pkt) + 40))}]
  puts "utilization [expr {([$qmon set pdepartures_] - $base(dep)) / $span / $cap}]"
  foreach k {1 2} {
    if {[info exists pert($k)]} { puts "pert_drops$k [$pert($k) set npkts_]" }
  }
  # the bin ending at the finish time, when finish ran before its sample
  if {[info exists sfile] && $::nbins < round($P(duration) / $P(bin))} { sample }
  foreach name [array names sfile] { close $sfile($name) }
  exit 0
}
$ns at $P(warmup) "snapshot"
$ns at $P(duration) "finish"
$ns run
