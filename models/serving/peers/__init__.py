"""Other systems' configurations, written from their papers and public code: the usual
vLLM-style cluster of identical mixed instances (:mod:`.vllm`, routed round-robin or to the
least-outstanding instance by :mod:`..sim.routers`), Splitwise's prompt and token pools
(:mod:`.splitwise`), DistServe's per-phase placement (:mod:`.distserve`), AcceLLM's pairs
(:mod:`.accellm`) and L4's length-specialised stages (:mod:`.l4`)."""
