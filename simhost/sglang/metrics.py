"""`/metrics` (Prometheus text, SGLang 0.5.9 metric names from `sglang/srt/metrics/collector.py`) and
`/get_server_info` (`ServerArgs` fields + scheduler info + `internal_states` + `version`).

`internal_states[0].avg_spec_accept_length` is cumulative since start (as SGLang's is; take a
run's own window from the Decode lines instead).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from simhost.sglang import model

if TYPE_CHECKING:
    from simhost.sglang.launch_server import Server

VERSION = "0.5.9"


def server_info(server: Server) -> dict[str, Any]:
    info: dict[str, Any] = dict(vars(server.ns))
    engine = server.engine
    info.update({
        "max_total_num_tokens": server.tokens, "max_req_input_len": server.tokens - 1,
        "status": server.app.status if server.app else "starting", "version": VERSION,
        "internal_states": [{
            "avg_spec_accept_length": engine.avg_spec_accept_length if engine else 0.0,
            "last_gen_throughput": engine.stats.last_gen_throughput if engine else 0.0,
            "effective_max_running_requests_per_dp": server.max_running,
            "memory_usage": {"weight": model.WEIGHTS_GIB,
                             "kvcache": round(server.mem_fraction * server.total_gib - model.WEIGHTS_GIB, 2),
                             "token_capacity": server.tokens,
                             "graph": round(model.BASE_GIB + model.GRAPH_GIB_PER_DRAFT * server.d, 2)},
        }],
    })
    return info


def metrics_text(server: Server) -> str:
    engine = server.engine
    assert engine is not None
    labels = f'engine_type="unified",model_name="{server.ns.served_model_name}",pp_rank="0",tp_rank="0"'
    st = engine.stats
    usage = engine.used_tokens / max(1, server.tokens)
    rate = model.accept_rate_059(engine.avg_spec_accept_length, server.d) if engine.spec else 0.0
    rows = [
        ("num_running_reqs", "gauge", "The number of running requests.", len(engine.running)),
        ("num_queue_reqs", "gauge", "The number of requests in the waiting queue.", len(engine.queue)),
        ("num_used_tokens", "gauge", "The number of used tokens.", engine.used_tokens),
        ("token_usage", "gauge", "The token usage.", round(usage, 4)),
        ("gen_throughput", "gauge", "The generation throughput (token/s).", round(st.last_gen_throughput, 2)),
        ("cache_hit_rate", "gauge", "The prefix cache hit rate.", 0.0),
        ("spec_accept_length", "gauge", "The average acceptance length of speculative decoding.",
         round(engine.avg_spec_accept_length, 4)),
        ("spec_accept_rate", "gauge", "The average acceptance rate of speculative decoding.", round(rate, 4)),
        ("max_total_num_tokens", "gauge", "Maximum total number of tokens in the KV cache pool.", server.tokens),
        ("is_cuda_graph", "gauge", "Whether the batch is using CUDA graph.", 1.0),
        ("num_retracted_reqs", "gauge", "The number of retracted requests.", 0),
        ("utilization", "gauge", "The utilization.", 1.0 if engine.running else 0.0),
        ("engine_startup_time", "gauge", "The time taken for the engine to start up.",
         round(server.load_time + 35.0, 2)),
        ("engine_load_weights_time", "gauge", "The time taken for the engine to load weights.",
         round(server.load_time, 2)),
        ("prompt_tokens_total", "counter", "Number of prefill tokens processed.", st.prompt_tokens),
        ("generation_tokens_total", "counter", "Number of generation tokens processed.", st.generation_tokens),
        ("num_requests_total", "counter", "Number of requests processed.", st.requests),
        ("num_aborted_requests_total", "counter", "Number of requests aborted.", st.aborted),
    ]
    out: list[str] = []
    for name, kind, helptext, value in rows:
        out.append(f"# HELP sglang:{name} {helptext}")
        out.append(f"# TYPE sglang:{name} {kind}")
        out.append(f"sglang:{name}{{{labels}}} {float(value)}")
    out.append(f"# scraped at {time.time():.0f}")
    return "\n".join(out[:-1]) + "\n"
