"""The serving simulator's neighbours: :mod:`.routers` (the peers' routers) and
:mod:`.check_replay` (the independent checker of a replay). The event loop and our router are
the family's own (:mod:`..replay`, :mod:`..router`)."""
