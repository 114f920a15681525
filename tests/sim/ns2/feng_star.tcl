# ns-2 oracle for Feng & Tinnakornsrisuphap 2000, Figs. 2-4 (replays/burst_fig2_4.toml): M clients
# hand single packets to their transport at Poisson times (mean gap 0.01 s) and send them through a
# gateway to one server (Table 1: client links 10 Mb/s / 25 ms, bottleneck 50 Mb/s / 25 ms, gateway
# buffer 50 packets, 1500-byte packets, advertised window 20, Vegas 1/3/1, RED min/max 10/40).
# Usage: ns feng_star.tcl key=value ...   Prints "key value" lines:
#   cov (std/mean of packets arriving at the gateway per bin after warmup), throughput_mbps
#   (bytes leaving the gateway), loss_pct (gateway drops / arrivals), arrivals, drops.
# background=N makes the first N clients Reno (Figs. 5-12: clients added to a Reno background)
# and adds added_loss_pct, added_throughput_mbps and added_arrivals (packets at the gateway),
# those of the other clients.
# sched_dir: client i hands a packet to its agent at each time (s) of sched_dir/client<i>.txt
# instead of drawing Poisson times (traceflow's own draws, for a packet-for-packet comparison);
# qtrace: ns-2's trace of the gateway -> server queue (+ - d lines) into that file.
# step (s): client i's link delay is i * step longer (no two clients' packets meet at the same
# instant; ns-2 orders some such ties against FIFO, likely by its double-precision rounding).
# tick_phases: file to write each TCP agent's tick phase to (boot_time_ s, one line per client),
# so that traceflow can take the same (an RTT sample counts whole ticks from that phase; one tick
# more moves the RTO by a tick). TcpAgent::reset() draws boot_time_ = Random::uniform(tcpTick_),
# and Simulator run resets every agent (in no set order); at time 0 the agents are reset once more
# in client order from the default RNG seeded P(seed), whose copy gives the phases.
# The paper ran ns (FT:79) in 2000; where ns-2.35's defaults changed since (ns-default.tcl dates
# them) this script takes the paper's: windowInit_ 1, syn_ and delay_growth_ false (2001/5),
# singledup_ 0 (no limited transmit: 2001/11/28), tcpTick_ 0.1 (0.01 since 2002/03/07) with
# no minrto_ (added 2001/05/10: the floor is two ticks), rtxcur_init_ 6.0 (3.0 since 2006/01/21)
# (replays/setups.toml). queue-limit 50 is Table 1's 50-packet buffer
# as ns counts it: 49 waiting plus the one in transmission (DropTail drops when length + 1 >=
# limit), our droptail limit 49; RED's limit counts waiting packets (ours: 50).
# Every data packet is 1500 bytes on the wire: Agent/TCP adds 40 header bytes to packetSize_
# (but to segment 0, syn_ being false: our tcp.ns2_bare_first), Vegas's own output() adds none,
# so Vegas agents get packetSize_ pkt + 40.
array set P {
  clients 10 transport Reno delack 0 queue DropTail duration 200 warmup 10 bin 0.1
  client_rate 10Mb client_delay 25ms bneck_rate 50Mb bneck_delay 25ms limit 50
  pkt 1460 window 20 iw 1 minrto 0 tick 0.1 rtxcur_init 6.0 syn false delay_growth false singledup 0 gap 0.01
  start_spread 1.0 red_min 10 red_max 40 red_wq 0.002 red_maxp 0.1 red_gentle false red_wait true
  red_bytes false vegas_alpha 1 vegas_beta 3 vegas_gamma 1 seed 1 background 0 sched_dir {}
  qtrace {} step 0 tick_phases {}
}
source [file join [file dirname [info script]] common.tcl]
Agent/TCP set singledup_ $P(singledup)
Agent/TCP set rtxcur_init_ $P(rtxcur_init)
red_defaults
Agent/TCP/Vegas set v_alpha_ $P(vegas_alpha)
Agent/TCP/Vegas set v_beta_ $P(vegas_beta)
Agent/TCP/Vegas set v_gamma_ $P(vegas_gamma)
Agent/UDP set packetSize_ [expr {$P(pkt) + 40}]

set gw [$ns node]
set srv [$ns node]
$ns simplex-link $gw $srv $P(bneck_rate) $P(bneck_delay) $P(queue)
$ns simplex-link $srv $gw $P(bneck_rate) $P(bneck_delay) DropTail
$ns queue-limit $gw $srv $P(limit)

set sinkclass [expr {$P(delack) ? "Agent/TCPSink/DelAck" : "Agent/TCPSink"}]

for {set i 0} {$i < $P(clients)} {incr i} {
  set c($i) [$ns node]
  # step (s): client i's link is i * step longer (breaks exact ties)
  $ns duplex-link $c($i) $gw $P(client_rate) [expr {[delay_parse $P(client_delay)] + $i * $P(step)}] DropTail
  $ns queue-limit $c($i) $gw 1000
  $ns queue-limit $gw $c($i) 1000
  set proto [expr {$i < $P(background) ? "Reno" : $P(transport)}]
  if {$proto eq "UDP"} {
    set src($i) [new Agent/UDP]
    set dst($i) [new Agent/Null]
  } else {
    set src($i) [new $agent($proto)]
    if {$proto eq "Vegas"} { $src($i) set packetSize_ [expr {$P(pkt) + 40}] }
    set dst($i) [new $sinkclass]
  }
  $src($i) set fid_ $i
  $ns attach-agent $c($i) $src($i)
  $ns attach-agent $srv $dst($i)
  $ns connect $src($i) $dst($i)
  if {$P(sched_dir) ne ""} {
    set f [open [file join $P(sched_dir) client$i.txt]]
    foreach t [split [string trim [read $f]] "\n"] { $ns at $t "$src($i) advanceby 1" }
    close $f
    continue
  }
  # Poisson single packets: exponential on/off with empty bursts sends one packet per burst, and
  # at a near-infinite rate the gap is the exponential idle time alone
  set app($i) [new Application/Traffic/Exponential]
  # UDP sends the message as one packet; a TCP agent makes one segment of it
  $app($i) set packetSize_ [expr {$proto eq "UDP" ? $P(pkt) + 40 : $P(pkt)}]
  $app($i) set burst_time_ 0
  $app($i) set idle_time_ $P(gap)
  $app($i) set rate_ 1e15
  $app($i) use-rng $rng
  $app($i) attach-agent $src($i)
  $ns at [expr {$P(start_spread) * [$rng uniform 0 1]}] "$app($i) start"
}

if {$P(tick_phases) ne ""} {
  proc pin_tick_phases {} {
    global P src defaultRNG
    set probe [new RNG]
    foreach r [list $defaultRNG $probe] {
      $r seed $P(seed)
      $r next-substream
    }
    set f [open $P(tick_phases) w]
    foreach i [lsort -integer [array names src]] {
      if {[$src($i) info class] eq "Agent/UDP"} continue
      $src($i) reset
      puts $f [expr {[$probe uniform 0 1] * $P(tick)}]
    }
    close $f
    # each reset drew exactly one number: the two streams are still in step
    if {[$defaultRNG uniform 0 1] != [$probe uniform 0 1]} { error "tick_phases: draws out of step" }
    delete $probe
  }
  $ns at 0.0 "pin_tick_phases"
}

set qmon [$ns monitor-queue $gw $srv ""]
if {$P(qtrace) ne ""} {
  set qtf [open $P(qtrace) w]
  $ns trace-queue $gw $srv $qtf
}
if {$P(background) > 0} {
  set fmon [$ns makeflowmon Fid]
  $ns attach-fmon [$ns link $gw $srv] $fmon
}
set last_arr 0
set nbins 0
set sum 0.0
set sumsq 0.0
proc sample {} {
  global ns qmon P last_arr nbins sum sumsq
  set arr [$qmon set parrivals_]
  if {[$ns now] > $P(warmup) + 1e-9} {
    set x [expr {$arr - $last_arr}]
    incr nbins
    set sum [expr {$sum + $x}]
    set sumsq [expr {$sumsq + $x * $x}]
  }
  set last_arr $arr
  $ns at [expr {[$ns now] + $P(bin)}] "sample"
}
$ns at $P(warmup) "sample"

proc finish {} {
  global qmon P nbins sum sumsq qtf
  if {[info exists qtf]} { close $qtf }
  set mean [expr {$sum / $nbins}]
  set var [expr {$sumsq / $nbins - $mean * $mean}]
  set arr [$qmon set parrivals_]
  set drops [$qmon set pdrops_]
  puts "cov [expr {$mean > 0 ? sqrt($var) / $mean : 0}]"
  puts "throughput_mbps [expr {8.0 * [$qmon set bdepartures_] / $P(duration) / 1e6}]"
  puts "loss_pct [expr {$arr > 0 ? 100.0 * $drops / $arr : 0}]"
  puts "arrivals $arr"
  puts "drops $drops"
  if {$P(background) > 0} {
    global fmon
    set a 0; set d 0; set b 0
    foreach f [$fmon flows] {
      if {[$f set flowid_] >= $P(background)} {
        incr a [$f set parrivals_]; incr d [$f set pdrops_]; incr b [$f set bdepartures_]
      }
    }
    puts "added_loss_pct [expr {$a > 0 ? 100.0 * $d / $a : 0}]"
    puts "added_throughput_mbps [expr {8.0 * $b / $P(duration) / 1e6}]"
    puts "added_arrivals $a"
  }
  exit 0
}
$ns at [expr {$P(duration) + 1e-9}] "finish"
$ns run
