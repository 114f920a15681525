# ns-2 referee for the TCP-MT base scenario (replays/tcpmt_base.toml, Park & Tuan 2000 sec. 5.1):
# 32 background clients (Pareto file sizes k * U^(-1/alpha) bytes, each file a fresh connection,
# exponential idle times, every client starts idle) and one infinite TCP source, all links 10 Mb/s,
# 5 ms, 1 kB segments, ns-2's defaults of 1999 (window 64 as the replay states). With ssc=1 the
# measured connection runs SSC's threshold schedule, written here in Tcl as sim/ssc.pxi computes it:
# every `period` s the bits it sent (ndatabytes_) map to a contention level (quantile edges of all
# blocks so far, level h below the first edge), CondProb counts the transition, L2hat = E[L2 | L1]
# (L1 itself for an empty row), and increase_num_ (TCP-MT's xi) = A if L2hat <= theta else 1
# (schedule threshold), or (A - 1) / (h - 1) * (h - L2hat) + 1 (schedule linear: A at level 1,
# 1 at level h).
# measured=n runs n infinite sources (SSC drives the first); brate is the rate of the g1-g2
# bottleneck and of g2-r1 (Table III: 20 Mb/s), rate that of every other link. rtt is the measured
# connections' propagation RTT (Figs. 8-9; default: the three 5 ms hops, 30 ms): their access link
# takes the extra delay, as traceflow's extra_delay (tcpmt/setup.py variant). tracking is the
# correlation, over `period` blocks (the first dropped), of the measured and the background bytes
# leaving the bottleneck router g2 (PT:259; tcpmt/claims.py tracking). With sizes_dir, client i
# sends the file sizes of sizes_dir/client<i>.txt (bytes, one per line) in order instead of
# drawing them: at alpha = 1.05 a few huge files decide a sample path's load, so the two
# simulators compare only on the same files.
# With meta=1, A starts at a and the symmetric metacontrol (sec. 3.5, as sim/ssc.pxi metacontrol)
# moves it by nu every block: up when the block's delivered bits (gamma) and A moved the same way
# since the latest earlier block of the same level, down when they moved oppositely, else on in
# its last direction (upward at first); A_mean and A_sd are over the blocks of the second half,
# A_up and A_down count the steps (a step below a, reset to a, counts as down).
# Table II's short connections: the measured sources start at `start` s; for the first `warmup`
# s after it SSC learns with xi = 1 (Cases II, III); prior_out writes the run's final level edges
# and CondProb counts to a file, which prior_in reads as an a-priori table (Case I: fixed edges,
# no learning); trace_out writes each block's end time and delivered bits (gamma).
# Usage: ns tcpmt.tcl key=value ...   Prints "key value" lines.
array set P {
  duration 1000 seed 1 clients 32 flavor Reno
  bg_k 252 bg_alpha 1.05 bg_idle 0.16
  rate 10Mb brate {} delay 5ms limit 50 pkt 1000 window 64 iw 1 minrto 0 tick 0.1 rtxcur_init 6.0
  ssc 0 schedule threshold theta 4 A 4 period 2.0 levels 8 measured 1 rtt {} sizes_dir {}
  meta 0 nu 0.05 a 1.0 start 0.0 warmup 0.0 prior_in {} prior_out {} trace_out {}
}
# ns-2's defaults before the changes dated in ns-default.tcl (see replays/tcpmt_base.toml):
# windowInit_ 1, minrto_ 0, and syn_ and delay_growth_ false (common.tcl's defaults; both became
# true on 2001/5/17)
source [file join [file dirname [info script]] common.tcl]
Agent/TCP set singledup_ 0
Agent/TCP set rfc2988_ false
Agent/TCP set rtxcur_init_ $P(rtxcur_init)
Agent/TCP set maxrto_ 100000
Agent/TCP set precisionReduce_ false
Agent/TCP set exitFastRetrans_ false

if {$P(brate) eq ""} { set P(brate) $P(rate) }
set g1 [$ns node]
set g2 [$ns node]
$ns simplex-link $g1 $g2 $P(brate) $P(delay) DropTail
$ns simplex-link $g2 $g1 $P(brate) $P(delay) DropTail
$ns queue-limit $g1 $g2 $P(limit)
$ns queue-limit $g2 $g1 $P(limit)
set r0 [$ns node]
set r1 [$ns node]
foreach r [list $r0 $r1] brate [list $P(rate) $P(brate)] {
  $ns duplex-link $g2 $r $brate $P(delay) DropTail
  $ns queue-limit $g2 $r 1000
  $ns queue-limit $r $g2 1000
}
set agent(Reno) Agent/TCP/Reno
set agent(Vegas) Agent/TCP/Vegas

# ---- background: file transfers with idle periods ----
proc idle {i} {
  global ns rng P
  $ns at [expr {[$ns now] + [$rng exponential $P(bg_idle)]}] "request $i"
}
proc request {i} {
  global bg bgsink rng P sizes next
  if {$P(sizes_dir) ne ""} {
    set bytes [lindex $sizes($i) $next($i)]
    incr next($i)
  } else {
    set bytes [expr {floor($P(bg_k) * pow([$rng uniform 0 1], -1.0 / $P(bg_alpha)) + 0.5)}]
  }
  if {$bytes < 1} { set bytes 1 }
  $bg($i) reset
  $bgsink($i) reset
  $bg($i) advanceby [expr {int(ceil($bytes / $P(pkt)))}]
}
for {set i 0} {$i < $P(clients)} {incr i} {
  set n($i) [$ns node]
  $ns duplex-link $n($i) $g1 $P(rate) $P(delay) DropTail
  $ns queue-limit $n($i) $g1 1000
  $ns queue-limit $g1 $n($i) 1000
  set bg($i) [new Agent/TCP/Reno]
  set bgsink($i) [new Agent/TCPSink]
  $ns attach-agent $n($i) $bg($i)
  $ns attach-agent $r0 $bgsink($i)
  $ns connect $bg($i) $bgsink($i)
  $bg($i) proc done {} "idle $i"
  if {$P(sizes_dir) ne ""} {
    set f [open [file join $P(sizes_dir) client$i.txt]]
    set sizes($i) [split [string trim [read $f]] "\n"]
    close $f
    set next($i) 0
  }
  $ns at 0.0 "idle $i"
}

# ---- the measured infinite sources ----
set mdelay [time_parse $P(delay)]
if {$P(rtt) ne ""} { set mdelay [expr {$mdelay + max(0.0, ($P(rtt) - 6 * $mdelay) / 2)}] }
for {set j 0} {$j < $P(measured)} {incr j} {
  set m($j) [$ns node]
  $ns duplex-link $m($j) $g1 $P(rate) $mdelay DropTail
  $ns queue-limit $m($j) $g1 1000
  $ns queue-limit $g1 $m($j) 1000
  set mtcp($j) [new $agent($P(flavor))]
  # Vegas's output() adds no header to packetSize_ (tcp-vegas.cc): 1040 bytes on the wire, like
  # the Reno agents' pkt + 40 and our segments; it still acknowledges, and we count, pkt per packet
  if {$P(flavor) eq "Vegas"} { $mtcp($j) set packetSize_ [expr {$P(pkt) + 40}] }
  set sink($j) [new Agent/TCPSink]
  $ns attach-agent $m($j) $mtcp($j)
  $ns attach-agent $r1 $sink($j)
  $ns connect $mtcp($j) $sink($j)
  set ftp($j) [new Application/FTP]
  $ftp($j) attach-agent $mtcp($j)
  $ns at $P(start) "$ftp($j) start"
}
if {$P(measured)} { set tcp $mtcp(0) }

# ---- SSC (threshold schedule) ----
set seen {}
set prev_level 0
set last_bytes 0
for {set a 1} {$a <= $P(levels)} {incr a} {
  set rowsum($a) 0
  for {set b 1} {$b <= $P(levels)} {incr b} { set cond($a,$b) 0 }
}
proc edges {} {
  # numpy's linear quantiles at k/h of the sorted blocks
  global seen P
  set nseen [llength $seen]
  set out {}
  for {set k 1} {$k < $P(levels)} {incr k} {
    set pos [expr {($nseen - 1) * double($k) / $P(levels)}]
    set i [expr {int(floor($pos))}]
    set frac [expr {$pos - $i}]
    set e [lindex $seen $i]
    if {$i + 1 < $nseen} { set e [expr {$e + $frac * ([lindex $seen [expr {$i + 1}]] - $e)}] }
    lappend out $e
  }
  return $out
}
proc level {x} {
  # a value equal to an edge is more contended
  global seen P fixed_edges
  if {$P(prior_in) eq ""} {
    set seen [lsort -real [concat $seen [list $x]]]
    set es [edges]
  } else {
    set es $fixed_edges
  }
  set up 0
  foreach e $es { if {$e < $x} { incr up } }
  return [expr {$P(levels) - $up}]
}
if {$P(prior_in) ne ""} {
  set f [open $P(prior_in)]
  foreach line [split [string trim [read $f]] "\n"] {
    if {[lindex $line 0] eq "edges"} {
      set fixed_edges [lrange $line 1 end]
    } else {
      lassign $line a b count
      set cond($a,$b) $count
      incr rowsum($a) $count
    }
  }
  close $f
}
set blocks_gamma {}
set direction 1.0
set last_ack -1
set Atrace {}
if {$P(meta)} { set P(A) $P(a) }
array set moves {up 0 down 0}
proc metacontrol {l1 gamma} {
  global P metaA metag direction moves
  set step $direction
  if {[info exists metaA($l1)]} {
    set dA [expr {$P(A) - $metaA($l1)}]
    set dg [expr {$gamma - $metag($l1)}]
    if {$dA != 0} {
      if {$dg * $dA > 0} { set step 1.0 } elseif {$dg * $dA < 0} { set step -1.0 }
    }
  }
  set metaA($l1) $P(A)
  set metag($l1) $gamma
  set direction $step
  incr moves([expr {$step > 0 ? "up" : "down"}])
  set P(A) [expr {$P(A) + $P(nu) * $step}]
  if {$P(A) < $P(a)} {
    set P(A) $P(a)
    set direction 1.0
  }
}
proc ssc_block {} {
  global ns tcp P prev_level last_bytes cond rowsum last_ack Atrace blocks_gamma
  set acked [$tcp set ack_]
  set gamma [expr {8.0 * $P(pkt) * ($acked - $last_ack)}]
  set last_ack $acked
  set bytes [$tcp set ndatabytes_]
  set l1 [level [expr {8.0 * ($bytes - $last_bytes)}]]
  set last_bytes $bytes
  if {$prev_level > 0 && $P(prior_in) eq ""} {
    incr cond($prev_level,$l1)
    incr rowsum($prev_level)
  }
  lappend blocks_gamma [list [$ns now] $gamma]
  set prev_level $l1
  set l2 $l1
  if {$rowsum($l1) > 0} {
    set s 0.0
    for {set b 1} {$b <= $P(levels)} {incr b} { set s [expr {$s + $b * $cond($l1,$b)}] }
    set l2 [expr {$s / $rowsum($l1)}]
  }
  if {$P(meta)} {
    metacontrol $l1 $gamma
    lappend Atrace [list [$ns now] $P(A)]
  }
  if {!$P(ssc) || [$ns now] - $P(start) < $P(warmup) - 1e-9} {
    set xi 1.0
  } elseif {$P(schedule) eq "linear"} {
    set xi [expr {($P(A) - 1.0) / ($P(levels) - 1) * ($P(levels) - $l2) + 1.0}]
  } else {
    set xi [expr {$l2 <= $P(theta) ? $P(A) : 1.0}]
  }
  $tcp set increase_num_ $xi
  $ns at [expr {[$ns now] + $P(period)}] "ssc_block"
}
if {$P(ssc) || $P(trace_out) ne ""} { $ns at [expr {$P(start) + $P(period)}] "ssc_block" }

set qmon [$ns monitor-queue $g1 $g2 ""]
set bgmon [$ns monitor-queue $g2 $r0 ""]
set mmon [$ns monitor-queue $g2 $r1 ""]
set blocks {}
set last_m 0
set last_b 0
proc track_block {} {
  global ns mmon bgmon P blocks last_m last_b
  set dm [$mmon set pdepartures_]
  set db [$bgmon set pdepartures_]
  lappend blocks [list [expr {$dm - $last_m}] [expr {$db - $last_b}]]
  set last_m $dm
  set last_b $db
  $ns at [expr {[$ns now] + $P(period)}] "track_block"
}
$ns at $P(period) "track_block"
proc correlation {pairs} {
  set n [llength $pairs]
  if {$n < 4} { return nan }
  set sx 0.0; set sy 0.0
  foreach p $pairs { set sx [expr {$sx + [lindex $p 0]}]; set sy [expr {$sy + [lindex $p 1]}] }
  set mx [expr {$sx / $n}]; set my [expr {$sy / $n}]
  set cxy 0.0; set cxx 0.0; set cyy 0.0
  foreach p $pairs {
    set dx [expr {[lindex $p 0] - $mx}]; set dy [expr {[lindex $p 1] - $my}]
    set cxy [expr {$cxy + $dx * $dy}]; set cxx [expr {$cxx + $dx * $dx}]; set cyy [expr {$cyy + $dy * $dy}]
  }
  if {$cxx == 0 || $cyy == 0} { return nan }
  return [expr {$cxy / sqrt($cxx * $cyy)}]
}
proc finish {} {
  global qmon bgmon mtcp P blocks Atrace moves blocks_gamma cond
  if {$P(trace_out) ne ""} {
    set f [open $P(trace_out) w]
    foreach b $blocks_gamma { puts $f $b }
    close $f
  }
  if {$P(prior_out) ne ""} {
    set f [open $P(prior_out) w]
    puts $f "edges [edges]"
    for {set a 1} {$a <= $P(levels)} {incr a} {
      for {set b 1} {$b <= $P(levels)} {incr b} { puts $f "$a $b $cond($a,$b)" }
    }
    close $f
  }
  set arr [$qmon set parrivals_]
  # data packets are all pkt + 40 bytes (ns-2 sends whole segments); byte counters overflow
  puts "link_utilization [expr {8.0 * [$qmon set pdepartures_] * ($P(pkt) + 40) / $P(duration) / [bw_parse $P(brate)]}]"
  puts "loss_rate [expr {$arr > 0 ? double([$qmon set pdrops_]) / $arr : 0.0}]"
  if {$P(measured)} {
    puts "throughput_bps [expr {8.0 * ([$mtcp(0) set ack_] + 1) * $P(pkt) / $P(duration)}]"
    puts "timeouts [$mtcp(0) set nrexmit_]"
    puts "tracking [correlation [lrange $blocks 1 end]]"
  }
  if {$P(meta)} {
    set n 0; set sum 0.0; set sq 0.0
    foreach p $Atrace {
      if {[lindex $p 0] >= $P(duration) / 2.0} {
        set x [lindex $p 1]
        incr n; set sum [expr {$sum + $x}]; set sq [expr {$sq + $x * $x}]
      }
    }
    set mean [expr {$sum / $n}]
    puts "A_mean $mean"
    puts "A_sd [expr {sqrt(max(0.0, $sq / $n - $mean * $mean))}]"
    puts "A_up $moves(up)"
    puts "A_down $moves(down)"
  }
  set total 0.0
  for {set j 0} {$j < $P(measured)} {incr j} {
    set total [expr {$total + 8.0 * ([$mtcp($j) set ack_] + 1) * $P(pkt) / $P(duration)}]
  }
  puts "total_bps $total"
  puts "background_bps [expr {8.0 * [$bgmon set pdepartures_] * ($P(pkt) + 40) / $P(duration)}]"
  exit 0
}
$ns at $P(duration) "finish"
$ns run
