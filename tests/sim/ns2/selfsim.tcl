# ns-2 referee for Park, Kim & Crovella 1997 (section 2.2 baseline), mirrored by
# replays/selfsim_*.toml: 2 servers and n clients across one bottleneck (servers -> g1 -> g2 ->
# clients), 15 ms on every link. Client i requests files from server i mod 2 one after another:
# idle (exponential, mean idle s), then the server sends the next file size of
# sizes_dir/client<i>.txt (bytes; ns-2 agents send ceil(size/packetSize_) full packets) and the
# next idle period starts when the server's TCP has the last ACK (Agent done callback). Each
# transfer starts from a reset agent pair (slow start, initial RTO).
# Usage: ns selfsim.tcl key=value ...; prints "key value" lines and writes the bottleneck's
# departed bytes per bin (one number per line) to series=FILE.
array set P {
  clients 32 rate 1.5Mb buffer 6000 access 10Mb delay 15ms pkt 1000 window 20 iw 1
  minrto 0.2 tick 0.1 idle 0.82 duration 10000 bin 0.01 seed 1 sizes_dir . series series.txt
}
source [file join [file dirname [info script]] common.tcl]
# the bottleneck buffer in bytes: drop when the waiting bytes plus the packet exceed buffer
Queue/DropTail set queue_in_bytes_ true
Queue/DropTail set mean_pktsize_ 1

set g1 [$ns node]
set g2 [$ns node]
bottleneck $g1 $g2 $P(rate) $P(delay) DropTail $P(buffer) 1000000
foreach i {0 1} {
  set srv($i) [$ns node]
  $ns duplex-link $srv($i) $g1 $P(access) $P(delay) DropTail
  $ns queue-limit $srv($i) $g1 1000000
  $ns queue-limit $g1 $srv($i) 1000000
}
set idle [new RandomVariable/Exponential]
$idle set avg_ $P(idle)
$idle use-rng $rng

Agent/TCP instproc done {} {
  global ns idle
  $self instvar client_
  $ns at [expr {[$ns now] + [$idle value]}] "request $client_"
}
proc request {i} {
  global tcp sink sizes next P nreq nbytes
  if {$next($i) >= [llength $sizes($i)]} { return }
  set bytes [lindex $sizes($i) $next($i)]
  incr next($i)
  incr nreq
  set nbytes [expr {$nbytes + $bytes}]
  $tcp($i) reset
  $sink($i) reset
  $tcp($i) send $bytes
}
set nreq 0
set nbytes 0
for {set i 0} {$i < $P(clients)} {incr i} {
  set c($i) [$ns node]
  $ns duplex-link $g2 $c($i) $P(access) $P(delay) DropTail
  $ns queue-limit $g2 $c($i) 1000000
  $ns queue-limit $c($i) $g2 1000000
  set tcp($i) [new Agent/TCP/Reno]
  $tcp($i) set client_ $i
  set sink($i) [new Agent/TCPSink]
  $ns attach-agent $srv([expr {$i % 2}]) $tcp($i)
  $ns attach-agent $c($i) $sink($i)
  $ns connect $tcp($i) $sink($i)
  set f [open [file join $P(sizes_dir) client$i.txt]]
  set sizes($i) [split [string trim [read $f]] "\n"]
  close $f
  set next($i) 0
  $ns at [$idle value] "request $i"
}

set qmon [$ns monitor-queue $g1 $g2 ""]
# time integral of the queue's bytes (mean_queue_bytes)
set bint [$qmon get-bytes-integrator]
set out [open $P(series) w]
set last 0
proc sample {} {
  global ns qmon out last P
  set b [$qmon set bdepartures_]
  puts $out [expr {$b - $last}]
  set last $b
  $ns at [expr {[$ns now] + $P(bin)}] "sample"
}
$ns at $P(bin) "sample"
proc finish {} {
  global qmon out P nreq nbytes
  close $out
  set arr [$qmon set parrivals_]
  puts "arrivals $arr"
  puts "drops [$qmon set pdrops_]"
  $::bint newpoint [$::ns now] [$qmon set size_]
  puts "mean_queue_bytes [expr {[$::bint set sum_] / $P(duration)}]"
  puts "loss_rate [expr {double([$qmon set pdrops_]) / $arr}]"
  puts "utilization [expr {8.0 * [$qmon set bdepartures_] / $P(duration) / [$::ns bw_parse $P(rate)]}]"
  puts "requests $nreq"
  puts "mean_request [expr {double($nbytes) / max($nreq, 1)}]"
  exit 0
}
$ns at $P(duration) "finish"
$ns run
