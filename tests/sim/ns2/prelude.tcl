# Shared start of the ns-2 oracle scripts (after `array set P {defaults}`): key=value arguments
# override P, then the simulator `ns`, ns-2's seed and an RNG `rng` seeded alike.
foreach arg $argv {
  set kv [split $arg =]
  set P([lindex $kv 0]) [lindex $kv 1]
}
set ns [new Simulator]
ns-random $P(seed)
set rng [new RNG]
$rng seed $P(seed)
