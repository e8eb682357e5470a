"""The serving simulator: :mod:`.replay` (the request-level event loop), :mod:`.routers` (our
configuration's router and the peers' routers) and :mod:`.check_replay` (the independent
checker of a replay)."""
