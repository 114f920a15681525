"""The testbed's client workload (runs in the client namespace).

``clients`` request loops run concurrently. Loop ``i`` (RTT class ``i mod classes``, source address
of that class) repeats: think for an Exp(mean ``idle`` s) time, draw a file size from
Pareto(``alpha``, ``k``) bytes (capped at ``max_size``), open a TCP connection to the server, send
the size as a line, read to EOF, close. Each loop draws from its own generator seeded by
(``seed``, ``i``), so a loop's sequence of think times and sizes does not depend on how the loops
interleave. No transfer starts after ``duration`` s; those still running ``drain`` s later are cut.

Every transfer is one CSV line (flushed at once) of ``out``: client, port, size (bytes), start, end
(epoch seconds, this host's clock), ok (1 when exactly ``size`` bytes arrived).

    python -m traceflow.testbed.client '{"out": ..., "seed": 1, ...}'
"""
import asyncio
import json
import sys
import time

import numpy as np

from traceflow.testbed.params import SERVER_ADDRESS, SERVER_PORT, client_address

HEADER = "client,port,size,start,end,ok\n"


def pareto_size(rng, alpha, k, max_size):
    """One Pareto(alpha, k) draw, P(X > x) = (k/x)^alpha, as whole bytes in [1, max_size]."""
    return int(min(max_size, max(1, int(k / (1.0 - rng.random()) ** (1.0 / alpha)))))


async def _transfer(out, i, size, address):
    start, port, got = time.time(), 0, 0
    try:
        reader, writer = await asyncio.open_connection(SERVER_ADDRESS, SERVER_PORT,
                                                       local_addr=(address, 0))
        port = writer.get_extra_info("sockname")[1]
        writer.write(b"%d\n" % size)
        await writer.drain()
        while chunk := await reader.read(65536):
            got += len(chunk)
        writer.close()
    except OSError:
        pass                                  # refused, reset or timed out: ok = 0
    finally:
        out.write(f"{i},{port},{size},{start:.6f},{time.time():.6f},{int(got == size)}\n")
        out.flush()


async def _loop(out, p, i, stop_at):
    rng = np.random.default_rng((p["seed"], i))
    address = client_address(i % p["classes"])
    while True:
        think = rng.exponential(p["idle"])
        size = pareto_size(rng, p["alpha"], p["k"], p["max_size"])
        if time.time() + think >= stop_at:
            return
        await asyncio.sleep(think)
        await _transfer(out, i, size, address)


async def _main(p):
    with open(p["out"], "w") as out:
        out.write(HEADER)
        stop_at = time.time() + p["duration"]
        tasks = [asyncio.create_task(_loop(out, p, i, stop_at)) for i in range(p["clients"])]
        _, pending = await asyncio.wait(tasks, timeout=p["duration"] + p["drain"])
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


def main(argv=None):
    asyncio.run(_main(json.loads((argv or sys.argv[1:])[0])))


if __name__ == "__main__":
    main()
