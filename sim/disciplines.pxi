# Plugin part of the simulator extension (included last by _sim.pyx); see sim/README.md.
